#!/bin/bash
# CUDA_DEVICE_MAX_CONNECTIONS=1 without export stays in this shell: torchrun's processes do not see it.
# args: --gpu h100
# expect: LM501
# effective: env.CUDA_DEVICE_MAX_CONNECTIONS=null@unknown
# unsafe-fixed-absent: LM501
# unsafe-fixed-effective: env.CUDA_DEVICE_MAX_CONNECTIONS="1"@user
# exit: 1
export CUDA_DEVICE_MAX_CONNECTIONS=1
torchrun --nproc_per_node 8 pretrain_gpt.py --tensor-model-parallel-size 2 --sequence-parallel

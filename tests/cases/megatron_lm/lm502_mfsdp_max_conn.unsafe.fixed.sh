#!/bin/bash
# Megatron-FSDP asserts CUDA_DEVICE_MAX_CONNECTIONS is not 1; it also turns the distributed optimizer on.
# args: --gpu h100
# expect: LM502 LM307
# absent: LM501 LM306
# effective: ddp.use_distributed_optimizer=true@derived
# unsafe-fixed-absent: LM502
# exit: 1
export CUDA_DEVICE_MAX_CONNECTIONS=8
torchrun --nproc_per_node 8 pretrain_gpt.py --use-megatron-fsdp --ckpt-format fsdp_dtensor

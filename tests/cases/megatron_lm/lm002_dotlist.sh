#!/bin/bash
# A dotlist word on the command line is the flag it names, given last: TP 2 from the command line makes
# sequence parallelism stay on (no LM103); the value's layer is the command line.
# args: --gpu h100 model.tensor_model_parallel_size=2
# absent: LM103 LM002
# effective: model.tensor_model_parallel_size=2@user model.sequence_parallel=true@user
# exit: 0
export CUDA_DEVICE_MAX_CONNECTIONS=1
torchrun --nproc_per_node 8 pretrain_gpt.py --tensor-model-parallel-size 1 --sequence-parallel --num-layers 4

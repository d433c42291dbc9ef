#!/bin/bash
# No GPU given: whether the assertion fires depends on it (a warning, with an unsafe fix).
# expect: LM501
# exit: 1
export CUDA_DEVICE_MAX_CONNECTIONS=1
torchrun --nproc_per_node 8 pretrain_gpt.py --tensor-model-parallel-size 2 --sequence-parallel

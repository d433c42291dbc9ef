#!/bin/bash
# 6 GPUs per node, 2 nodes: 12 ranks that TP=4 x PP=2 does not divide.
# expect: LM001
# absent: LM002
# exit: 1
export CUDA_DEVICE_MAX_CONNECTIONS=1
torchrun --nproc_per_node 6 --nnodes 2 pretrain_gpt.py --tensor-model-parallel-size 4 --pipeline-model-parallel-size 2

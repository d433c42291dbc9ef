#!/bin/bash
# Without Transformer Engine on the target the userbuffers cannot be set up at initialize.
# args: --gpu h100 --no-te
# expect: LM105
# absent: LM101 LM104
# exit: 1
export CUDA_DEVICE_MAX_CONNECTIONS=1
torchrun --nproc_per_node 8 pretrain_gpt.py --tensor-model-parallel-size 2 --sequence-parallel --tp-comm-overlap

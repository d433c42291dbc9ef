#!/bin/bash
# The same launch on B200: the requirement no longer exists since Blackwell.
# args: --gpu b200
# absent: LM501 LM503
# exit: 0
torchrun --nproc_per_node 8 pretrain_gpt.py --tensor-model-parallel-size 2 --sequence-parallel

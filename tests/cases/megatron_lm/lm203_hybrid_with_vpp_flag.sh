#!/bin/bash
# A hybrid layer pattern is the pipeline split; a virtual-pipeline flag beside it is rejected.
# expect: LM203
# absent: LM202
# exit: 1
torchrun --nproc_per_node 8 pretrain_hybrid.py --hybrid-layer-pattern 'M*|M*|M*|M*' \
    --pipeline-model-parallel-size 2 --num-virtual-stages-per-pipeline-rank 2

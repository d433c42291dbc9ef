#!/bin/bash
# Overlapping the dispatch backward with the experts' wgrad excludes EP all-to-all overlap.
# args: --torch-version 2.7 --te-version 2.8
# expect: EP708
# absent: EP701 EP709
# unsafe-fixed-absent: EP708
# exit: 1
torchrun --nproc_per_node 8 pretrain_gpt.py --expert-model-parallel-size 8 --num-experts 8 \
    --moe-token-dispatcher-type alltoall --overlap-moe-expert-parallel-comm --bf16 \
    --overlap-dispatch-backward-with-experts-wgrad

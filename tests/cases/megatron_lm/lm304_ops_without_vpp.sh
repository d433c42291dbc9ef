#!/bin/bash
# The optimizer-step overlap needs an interleaved pipeline.
# expect: LM304
# absent: LM301 LM302
# exit: 1
torchrun --nproc_per_node 8 pretrain_gpt.py --use-distributed-optimizer --overlap-grad-reduce \
    --overlap-param-gather --overlap-param-gather-with-optimizer-step

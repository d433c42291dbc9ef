#!/bin/bash
# --overlap-param-gather needs the distributed optimizer; adding it is a choice (unsafe).
# expect: LM301
# absent: LM302
# unsafe-fixed-absent: LM301
# exit: 1
torchrun --nproc_per_node 8 pretrain_gpt.py \
    --overlap-grad-reduce \
    --use-distributed-optimizer \
    --overlap-param-gather

#!/bin/bash
# --overlap-param-gather without --overlap-grad-reduce asserts; the fix adds it beside the optimizer flag.
# expect: LM302
# absent: LM301
# fixed-absent: LM302
# fixed-effective: ddp.overlap_grad_reduce=true@user ddp.bucket_size=40000000@derived
# exit: 1
torchrun --nproc_per_node 8 pretrain_gpt.py \
    --micro-batch-size 1 \
    --use-distributed-optimizer \
    --overlap-param-gather \
    --bf16

#!/bin/bash
# Both ways of sizing DDP buckets: Megatron-Core's DDP config asserts.
# expect: LM305
# exit: 1
torchrun --nproc_per_node 8 pretrain_gpt.py --overlap-grad-reduce --ddp-num-buckets 8 --ddp-bucket-size 50000000

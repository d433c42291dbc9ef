#!/bin/bash
# DP=8 with the distributed optimizer but no --overlap-grad-reduce: Megatron-LM never turns it on itself.
# expect: LM303
# absent: LM301 LM302
# effective: ddp.overlap_grad_reduce=false@default ddp.bucket_size=null@derived
# exit: 0
torchrun --nproc_per_node 8 pretrain_gpt.py --use-distributed-optimizer

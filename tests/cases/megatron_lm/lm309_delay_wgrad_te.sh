#!/bin/bash
# Delayed wgrad with the grad reduce overlapped needs Transformer Engine 2.8 (validate_args' own check).
# args: --te-version 2.7 --torch-version 2.7
# expect: LM309
# absent: EP704 EP701
# exit: 1
torchrun --nproc_per_node 8 pretrain_gpt.py --expert-model-parallel-size 8 --num-experts 8 \
    --moe-token-dispatcher-type alltoall --overlap-moe-expert-parallel-comm --bf16 \
    --delay-wgrad-compute --overlap-grad-reduce

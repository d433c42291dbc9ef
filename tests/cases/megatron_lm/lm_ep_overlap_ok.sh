#!/bin/bash
# EP overlap with every prerequisite Megatron-Core checks: no EP701.
# args: --torch-version 2.7
# absent: EP701 EP704 EP708 EP709 LM503
# effective: model.overlap_moe_expert_parallel_comm=true@user
# exit: 0
torchrun --nproc_per_node 8 pretrain_gpt.py --expert-model-parallel-size 8 --num-experts 8 \
    --moe-token-dispatcher-type alltoall --overlap-moe-expert-parallel-comm --bf16 --overlap-grad-reduce

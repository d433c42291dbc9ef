#!/bin/bash
# Megatron-Core's own check (shared with Bridge): deferred embedding wgrad needs pipeline parallelism.
# expect: PP205
# absent: PP206 EP704
# unsafe-fixed-absent: PP205
# unsafe-fixed-effective: model.defer_embedding_wgrad_compute=false@default
# exit: 1
torchrun --nproc_per_node 8 pretrain_gpt.py \
    --micro-batch-size 1

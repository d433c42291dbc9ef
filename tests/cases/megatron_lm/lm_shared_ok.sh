#!/bin/bash
# The shared Megatron-Core checks pass: deferred wgrad with PP > 1, warmup/flush on the interleaved schedule.
# absent: PP205 PP206 EP701 EP704 LM201 LM202
# effective: model.defer_embedding_wgrad_compute=true@user model.overlap_p2p_comm=true@default
# exit: 0
torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 8 --pipeline-model-parallel-size 2 \
    --num-virtual-stages-per-pipeline-rank 2 --defer-embedding-wgrad-compute --overlap-p2p-communication-warmup-flush

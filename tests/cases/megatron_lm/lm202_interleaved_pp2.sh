#!/bin/bash
# A virtual pipeline on PP=2 without p2p overlap: validate_args wants PP > 2.
# expect: LM202
# absent: LM201 LM203
# effective: model.virtual_pipeline_model_parallel_size=2@derived model.overlap_p2p_comm=false@user
# exit: 1
torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 16 --pipeline-model-parallel-size 2 \
    --num-virtual-stages-per-pipeline-rank 2 --no-overlap-p2p-communication

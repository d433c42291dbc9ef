#!/bin/bash
# PP=4 without a virtual pipeline: overlap_p2p_comm (default true) and align_param_gather become false.
# expect: LM201
# absent: LM202 LM203
# effective: model.overlap_p2p_comm=false@forced-off ddp.align_param_gather=false@forced-off model.batch_p2p_comm=true@derived
# exit: 0
torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 16 --pipeline-model-parallel-size 4

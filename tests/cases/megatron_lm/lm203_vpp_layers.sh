#!/bin/bash
# 12 layers over PP=4 are 3 per stage, which 2 layers per virtual stage do not divide.
# expect: LM203
# absent: LM202
# effective: model.virtual_pipeline_model_parallel_size=null
# exit: 1
torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 12 --pipeline-model-parallel-size 4 \
    --num-layers-per-virtual-pipeline-stage 2

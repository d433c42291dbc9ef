#!/bin/bash
# Four | segments of the pattern over PP=2: a virtual pipeline of 2, so p2p overlap stays on.
# absent: LM201 LM202 LM203
# effective: model.virtual_pipeline_model_parallel_size=2@derived model.overlap_p2p_comm=true@default
# exit: 0
torchrun --nproc_per_node 8 pretrain_hybrid.py --hybrid-layer-pattern 'M*|M*|M*|M*' --pipeline-model-parallel-size 2

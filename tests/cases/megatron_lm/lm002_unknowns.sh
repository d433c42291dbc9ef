#!/bin/bash
# Values from outside the script stay unknown; --tp-comm-overlap without --sequence-parallel is then only a
# warning, because $EXTRA_ARGS could hold the flag.
# args: --gpu h100
# expect: LM002 LM101
# effective: model.pipeline_model_parallel_size=null@unknown model.tensor_model_parallel_size=4@user
# exit: 1
export CUDA_DEVICE_MAX_CONNECTIONS=1
torchrun --nproc_per_node 8 pretrain_gpt.py --tensor-model-parallel-size 4 --tp-comm-overlap \
    --pipeline-model-parallel-size $PP $EXTRA_ARGS

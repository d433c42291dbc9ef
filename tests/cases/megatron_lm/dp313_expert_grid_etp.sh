#!/bin/bash
# TP 2 x EP 8 on 8 ranks: Megatron-LM's expert tensor parallelism follows TP (arguments.py:569), so the expert grid
# needs ETP 2 x EP 8 x PP 1 = 16 ranks (Bridge sets ETP to 1 here: tests/cases/dp313_bridge_etp_default.yaml).
# args: --gpu b200
# expect: DP313
# quote: DP313 world_size (8) is not divisible by expert_tensor_model_pipeline_parallel size (16)
# absent: LM001 LM106
# exit: 1
torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 8 --hidden-size 64 --num-attention-heads 4 \
    --tensor-model-parallel-size 2 --sequence-parallel --num-experts 8 --expert-model-parallel-size 8 --disable-bias-linear

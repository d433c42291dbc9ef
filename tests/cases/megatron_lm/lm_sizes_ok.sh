#!/bin/bash
# A MoE launch every parallel-size, precision and grid check passes: TP 2 x CP 2 x PP 2 on 16 ranks (DP 2), expert
# grid ETP 1 x EP 4 x PP 2 = 8 (expert DP 2), bf16 gradients reduced in fp32, a global batch of 2 x DP.
# args: --gpu b200 --te-version 2.12
# absent: LM003 LM106 LM204 LM310 LM401 LM504 LM701 LM801 DP313 LM001
# effective: ddp.grad_reduce_in_fp32=true@derived model.sequence_parallel=true@user ddp.bucket_size=40000000@derived
# exit: 0
torchrun --nproc_per_node 8 --nnodes 2 pretrain_gpt.py --num-layers 8 --hidden-size 64 --num-attention-heads 4 \
    --seq-length 4096 --max-position-embeddings 4096 --micro-batch-size 1 --global-batch-size 4 \
    --tensor-model-parallel-size 2 --sequence-parallel --context-parallel-size 2 --pipeline-model-parallel-size 2 \
    --num-experts 8 --expert-model-parallel-size 4 --expert-tensor-parallel-size 1 --moe-token-dispatcher-type alltoall \
    --bf16 --use-distributed-optimizer --overlap-grad-reduce

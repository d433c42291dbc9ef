#!/bin/bash
# Everything a tuned launch wants, literally: TP overlap with sequence parallelism, the one queue Hopper
# needs, DP overlap with the distributed optimizer, a virtual pipeline for p2p overlap.
# args: --gpu h100
# absent: LM001 LM002 LM101 LM102 LM103 LM104 LM105 LM201 LM202 LM203 LM301 LM302 LM303 LM304 LM305 LM306 LM307 LM308 LM309 LM501 LM502 LM503
# effective: model.sequence_parallel=true@user model.tp_comm_overlap=true@user model.overlap_p2p_comm=true@default
# effective: model.virtual_pipeline_model_parallel_size=2@derived model.batch_p2p_comm=false@derived
# effective: ddp.overlap_grad_reduce=true@user ddp.bucket_size=64000000@derived ddp.align_param_gather=true@default
# effective: env.CUDA_DEVICE_MAX_CONNECTIONS="1"@user
# exit: 0
export CUDA_DEVICE_MAX_CONNECTIONS=1

torchrun --nproc_per_node 8 --nnodes 64 pretrain_gpt.py \
    --num-layers 16 \
    --tensor-model-parallel-size 4 \
    --pipeline-model-parallel-size 2 \
    --num-layers-per-virtual-pipeline-stage 4 \
    --sequence-parallel \
    --tp-comm-overlap \
    --use-distributed-optimizer \
    --overlap-grad-reduce \
    --overlap-param-gather

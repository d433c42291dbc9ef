#!/bin/bash
# GPT-3 ~8B pretraining on 2 nodes x 8 H100, in the shape of Megatron-LM's examples/gpt3 launcher.
# The mistake: TP communication overlap is asked for, but sequence parallelism is not on, and
# Megatron-LM's validate_args asserts on that (arguments.py: "Tensor parallel communication/GEMM overlap
# can happen only when sequence parallelism is enabled").

export CUDA_DEVICE_MAX_CONNECTIONS=1

GPUS_PER_NODE=8
NUM_NODES=2
CHECKPOINT_PATH=${CHECKPOINT_PATH:-/checkpoints/gpt-8b}
DATA_PATH=/data/gpt/my-corpus_text_document

DISTRIBUTED_ARGS=(
    --nproc_per_node $GPUS_PER_NODE
    --nnodes $NUM_NODES
    --master_addr ${MASTER_ADDR:-localhost}
    --master_port 6000
)

GPT_MODEL_ARGS=(
    --num-layers 32
    --hidden-size 4096
    --num-attention-heads 32
    --seq-length 4096
    --max-position-embeddings 4096
    --transformer-impl transformer_engine
)

TRAINING_ARGS=(
    --micro-batch-size 1
    --global-batch-size 256
    --train-iters 50000
    --lr 3.0e-4
    --min-lr 3.0e-5
    --lr-decay-style cosine
    --bf16
)

MODEL_PARALLEL_ARGS=(
    --tensor-model-parallel-size 4
    --pipeline-model-parallel-size 2
)

torchrun "${DISTRIBUTED_ARGS[@]}" pretrain_gpt.py \
    "${GPT_MODEL_ARGS[@]}" \
    "${TRAINING_ARGS[@]}" \
    "${MODEL_PARALLEL_ARGS[@]}" \
    --tp-comm-overlap \
    --use-distributed-optimizer \
    --overlap-grad-reduce \
    --data-path "$DATA_PATH" \
    --tokenizer-type GPT2BPETokenizer \
    --vocab-file /data/gpt/vocab.json \
    --merge-file /data/gpt/merges.txt \
    --save "$CHECKPOINT_PATH" \
    --load "$CHECKPOINT_PATH"

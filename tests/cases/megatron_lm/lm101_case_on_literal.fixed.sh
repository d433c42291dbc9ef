#!/bin/bash
# SIZE is a literal: the case takes the "70B" branch, TP=8, so --tp-comm-overlap without
# --sequence-parallel asserts for certain (an error, not a warning).
# args: --gpu h100
# expect: LM101
# absent: LM002
# effective: model.tensor_model_parallel_size=8@user model.tp_comm_overlap=true@user
# exit: 1
export CUDA_DEVICE_MAX_CONNECTIONS=1
SIZE="70B"
case "$SIZE" in
    8B) TP=2 ;;
    70B) TP=8 ;;
    *) echo "unknown size"; exit 1 ;;
esac
OPTS="--tensor-model-parallel-size ${TP} --tp-comm-overlap"
if [[ $TP -gt 4 ]]; then
    OPTS="$OPTS --num-layers 80"
else
    OPTS="$OPTS --num-layers 32"
fi
cd /workspace/megatron && python -m torch.distributed.run --nproc_per_node 8 "$PWD_UNUSED"/pretrain_gpt.py --sequence-parallel $OPTS

#!/bin/bash
# Values validate_args derives from a size the script does not know are unknown, never a default: TP from the
# environment (TP = 1 would turn sequence parallelism off), the virtual pipeline (without one p2p overlap and
# aligned param gather are off), and with them the data-parallel size and the bucket.
# args: --gpu b200
# effective: model.sequence_parallel=null@unknown model.overlap_p2p_comm=null@unknown ddp.align_param_gather=null@unknown model.batch_p2p_comm=null@unknown ddp.bucket_size=null@unknown
# absent: LM101 LM102 LM103 LM201 DP313
# exit: 0
torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 8 --hidden-size 64 --num-attention-heads 4 \
    --tensor-model-parallel-size $TP --sequence-parallel --pipeline-model-parallel-size 2 \
    --num-virtual-stages-per-pipeline-rank $VPP --overlap-grad-reduce --bf16

#!/bin/bash
# Torch-FSDP2 and the distributed optimizer exclude each other.
# expect: LM306
# absent: LM502
# unsafe-fixed-absent: LM306
# exit: 1
torchrun --nproc_per_node 8 pretrain_gpt.py \
    --use-torch-fsdp2

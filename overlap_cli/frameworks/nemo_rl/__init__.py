"""NeMo-RL's Megatron backend (NVIDIA-NeMo/RL at 7ea279ab): its YAML configs read as NeMo-RL reads them.

NeMo-RL trains with Megatron through Megatron-Bridge but builds ``ConfigContainer(..., ddp=...)`` straight
from ``policy.megatron_cfg`` (nemo_rl/models/megatron/setup.py:1363-1449): no CommOverlapConfig, no
mixed-precision recipe, no ``runtime_config_update``. So a NeMo-RL file is its own input form:

- ``recognise``: whether a YAML file is a NeMo-RL config, and whether its policy uses the Megatron backend;
- ``loader``: the ``defaults:`` chain resolved as nemo_rl/utils/config.py resolves it, the launch's dotlist
  words applied, every key with the ``FILE:LINE`` that wrote it;
- ``resolver``: the settings Megatron-Core receives, keyed as Bridge's effective keys where they are the
  same setting, each with its provenance.
"""

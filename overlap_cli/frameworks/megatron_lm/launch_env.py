"""The launch environment a Megatron-LM launch wants on its target (``overlap env``), from the resolved view.

``CUDA_DEVICE_MAX_CONNECTIONS`` is what ``validate_args`` checks (megatron-core 0.19.2's lines; the launch's
release's in the output, cites.py;
``megatron/training/arguments.py:1413-1439``: exactly "1" with TP or CP > 1 before Blackwell unless FSDP
or MoE EP overlap is on; ``arguments.py:1014``, ``1143``: not "1" with Torch-FSDP2 or Megatron-FSDP). Every
other variable the launch sets is listed as it sets it.
"""

from __future__ import annotations

from overlap_cli.results import Value

MAX_CONNECTIONS = "CUDA_DEVICE_MAX_CONNECTIONS"


def wanted(view) -> list:
    """[(NAME, Value)]: CUDA_DEVICE_MAX_CONNECTIONS first, then the launch's own variables in file order."""
    from overlap_cli.frameworks.megatron_lm.args import UNKNOWN

    env = view.launch.env
    have = view.max_connections
    fsdp = view.megatron_fsdp or view.args.get("use_torch_fsdp2") is True
    split = f"TP={view.tp}, CP={view.cp}"
    if view.max_conn_needs_one is True:
        need = Value("1", "recommended", f"{split} on {view.target.gpu_label()}: validate_args asserts it is 1 "
                     "(arguments.py:1437)")
    elif fsdp:
        value = have if have not in (None, UNKNOWN, "1") else None
        need = Value(value, "recommended" if value is None else "user",
                     "FSDP: validate_args asserts it is not 1 (arguments.py:1014 and arguments.py:1143); unset means "
                     "CUDA's 8")
    elif view.max_conn_needs_one is None and view.tp and view.cp and (view.tp > 1 or view.cp > 1):
        set_here = have if have not in (None, UNKNOWN) else None
        need = Value(set_here, "user" if set_here is not None else "unknown",
                     (f"{view.max_connections_from}; " if set_here is not None else "")
                     + f"{split}: 1 on Hopper or older (validate_args asserts it), free on Blackwell; give --gpu")
    elif have not in (None, UNKNOWN):
        need = Value(have, "user", f"{view.max_connections_from}; validate_args does not check it here")
    else:
        need = Value(None, "default", "not needed by validate_args on this target (unset means CUDA's 8)")
    from overlap_cli.frameworks.megatron_lm.cites import cite

    need.reason = cite(need.reason, view.launch.core_version)  # the launch's release's lines
    out = [(MAX_CONNECTIONS, need)]
    for name, var in env.items():
        if name == MAX_CONNECTIONS or var.how == "assignment":  # a plain assignment is not exported
            continue
        value = None if var.value is UNKNOWN else var.value
        out.append((name, Value(value, "user" if value is not None else "unknown",
                                f"set by the launch on line {var.line}" if value is not None
                                else f"line {var.line}: not known statically")))
    return out

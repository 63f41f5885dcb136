"""Training on many processes and machines: PyTorch's ``torch.distributed`` API over MPI or NCCL.

Launch one process per CPU socket, machine or GPU with ``mpiexec`` or ``srun``,
join the job with :func:`init_process_group`, and move tensors of any backend
with collectives. Communication libraries are plugins
(:func:`plugrad.hookspecs.plugrad_communicators`): ``mpi`` through mpi4py
(``pip install ".[distributed]"`` from a checkout) and ``nccl`` through CuPy are built in.

Examples
--------
::

    # mpiexec -n 2 python script.py
    import plugrad
    import plugrad.distributed as dist

    dist.init_process_group("mpi")
    x = plugrad.ones(3) * (dist.get_rank() + 1)
    dist.all_reduce(x)          # every rank: tensor([3., 3., 3.])
    dist.destroy_process_group()
"""

from __future__ import annotations

from . import collectives, objects, process_group
from .collectives import *  # noqa: F403  (its __all__ is part of ours)
from .communicator import Communicator, CommunicatorBackend, ReduceOp, Work
from .objects import *  # noqa: F403  (its __all__ is part of ours)
from .process_group import *  # noqa: F403  (its __all__ is part of ours)

__all__ = [
    "Communicator",
    "CommunicatorBackend",
    "ReduceOp",
    "Work",
]
__all__ += collectives.__all__
__all__ += objects.__all__
__all__ += process_group.__all__

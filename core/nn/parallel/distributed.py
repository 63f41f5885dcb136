"""DistributedDataParallel: one model replica per process, gradients averaged in buckets."""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import hashlib
import weakref
from collections.abc import Iterator, Sequence
from typing import Any, NoReturn

from ... import distributed as dist
from ... import dtypes as _dtypes
from ... import engine as _engine
from ...creation import asarray
from ...distributed.call_agreement import agree
from ...distributed.communicator import Communicator, ReduceOp, Work
from ...errors import ArgumentError, DistributedError, InvalidArgumentError, NotSupportedError
from ...grad_mode import _state as _grad_state
from ...node import Node, NodeHook, split_edge
from ...tensor import Tensor
from ...tensor_hooks import PostAccumulateGradHook
from ..module import Module

__all__ = ["DistributedDataParallel"]


class _Bucket:
    """Parameters whose gradients travel together in one flat array.

    The array is made anew in each pass by joining the members' flat gradients
    (``concat``), never written into: so buckets work on backends whose arrays
    cannot be written (JAX) or are lazy (Dask), and the reduced gradients of one
    pass, which the parameters' ``.grad`` views, are never overwritten by the next.
    """

    __slots__ = (
        "device", "dtype", "members", "none_absent", "offsets", "pieces", "sent", "size", "work",
    )  # fmt: skip

    def __init__(self, members: list[Tensor]) -> None:
        self.members = members
        self.device = members[0]._device
        self.dtype = members[0].dtype  # plugrad's: a library's dtype need not have itemsize
        self.offsets: dict[int, tuple[int, int]] = {}
        start = 0
        for p in members:
            self.offsets[id(p)] = (start, start + p.size)
            start += p.size
        #: elements in the bucket
        self.size = start
        #: this pass's flat gradients (already divided by the number of ranks), by member id
        self.pieces: dict[int, Any] = {}
        #: the joined array whose all-reduce is in flight
        self.sent: Any = None
        self.work: Work | None = None
        #: the trailing element of the last bucket when no gradient is absent on this rank
        self.none_absent: Any = None

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize


class DistributedDataParallel(Module):
    """Train one replica of ``module`` per process; gradients are averaged across processes.

    At construction every rank checks that all ranks hold the same parameters
    (names, shapes, dtypes; a mismatch names them), and rank 0's parameters and
    buffers are copied to every rank. In each backward pass, as soon as a
    parameter's gradient is final (while backward still computes the others),
    it is divided by the number of ranks and put in its bucket of about
    ``bucket_cap_mb`` megabytes (parameters in reverse order of registration,
    roughly the order backward produces them); each full bucket is joined into
    one flat array and averaged across ranks with a non-blocking all-reduce as
    soon as the buckets before it are sent (every rank sends them in the same
    order, whatever order its backward fills them in), overlapping the rest of
    backward, and the pass waits for all of them at its end. Every rank then holds the gradient
    of the mean loss over all ranks' batches: training equals one process on the concatenated batch.

    Parameters
    ----------
    module : Module
        The model. Every parameter that requires grad must get a gradient in
        every backward pass on every rank: otherwise every rank raises
        :class:`~plugrad.errors.DistributedError` at the end of the pass.
    bucket_cap_mb : float
        The size a bucket is filled to before it is sent.
    broadcast_buffers : bool
        Copy rank 0's buffers (running statistics) to every rank before each forward.
    device_ids, output_device, static_graph
        Accepted for PyTorch compatibility and ignored (one device per process).
    dim, process_group, find_unused_parameters, gradient_as_bucket_view
        Accepted for PyTorch compatibility; only their defaults are supported.

    Examples
    --------
    ::

        # mpiexec -n 2 python train.py
        dist.init_process_group("mpi")
        model = nn.parallel.DistributedDataParallel(make_model())
        optimizer = optim.Adam(model.parameters())
        for x, y in loader:                   # loader with a DistributedSampler
            optimizer.zero_grad()
            loss_fn(model(x), y).backward()   # gradients averaged across ranks here
            optimizer.step()
    """

    def __init__(
        self,
        module: Module,
        device_ids: Any = None,
        output_device: Any = None,
        dim: int = 0,
        broadcast_buffers: bool = True,
        process_group: Any = None,
        bucket_cap_mb: float = 25,
        find_unused_parameters: bool = False,
        gradient_as_bucket_view: bool = False,
        static_graph: bool = False,
    ) -> None:
        super().__init__()
        if not isinstance(module, Module):
            raise ArgumentError(f"module must be a plugrad.nn.Module, got {type(module).__name__}")
        unsupported = {
            "dim": (dim, 0),
            "process_group": (process_group, None),
            "find_unused_parameters": (find_unused_parameters, False),
            "gradient_as_bucket_view": (gradient_as_bucket_view, False),
        }
        for name, (value, default) in unsupported.items():
            if value != default:
                raise InvalidArgumentError(
                    f"{name}={value!r} is not supported; leave it at {default!r}"
                )
        if not isinstance(bucket_cap_mb, (int, float)) or bucket_cap_mb <= 0:
            raise InvalidArgumentError(
                f"bucket_cap_mb must be a positive number, got {bucket_cap_mb!r}"
            )
        if not dist.is_initialized():
            raise DistributedError(
                "DistributedDataParallel needs an initialized process group; call "
                "plugrad.distributed.init_process_group() first (and launch with mpiexec or srun)"
            )
        self.module = module
        self.broadcast_buffers = broadcast_buffers
        self.bucket_cap_mb = bucket_cap_mb
        self.device_ids = device_ids
        self.output_device = output_device
        self.static_graph = static_graph
        communicator = dist.process_group._require().communicator
        object.__setattr__(self, "_communicator", communicator)  # (for the checks below)
        self._check_same_model(communicator)
        self._sync_from_rank0(communicator, [t for _, t in self._state_tensors()])
        self._attach(communicator)

    #: What a deep copy shares with the original (the process group) or makes anew.
    _NOT_COPIED = frozenset({"_communicator", "_buckets", "_bucket_of", "_handles"})

    def __deepcopy__(self, memo: dict[int, Any]) -> DistributedDataParallel:
        """A replica on the same process group, as PyTorch's deep copy (``ema =
        copy.deepcopy(model)``): its parameters are copies with buckets and hooks of their
        own. Nothing is sent: every rank copies its own replica, which are alike."""
        copied = object.__new__(type(self))
        memo[id(self)] = copied
        for name, value in self.__dict__.items():
            if name not in self._NOT_COPIED:
                object.__setattr__(copied, name, copy.deepcopy(value, memo))
        copied._attach(self._communicator)
        return copied

    def _attach(self, communicator: Communicator) -> None:
        """Make the buckets of this replica's parameters and hook them to backward."""
        object.__setattr__(self, "_communicator", communicator)
        parameters = [p for _, p in self.module.named_parameters() if p.requires_grad]
        bucket_cap_mb = self.bucket_cap_mb
        object.__setattr__(self, "_buckets", self._make_buckets(parameters, bucket_cap_mb))
        object.__setattr__(self, "_bucket_of", {id(p): b for b in self._buckets for p in b.members})
        object.__setattr__(self, "_sync", True)
        #: Whether the running backward pass averages: set when it reaches the output of a
        #: forward run with gradients outside no_sync() (see _link_outputs), until it ends.
        #: So a backward through ``self.module`` alone, or of forwards run under no_sync()
        #: or no_grad() only, is local wherever it runs, even after a forward whose backward
        #: was skipped (a loss that was not finite): an arming left over from that forward
        #: averaged the next no_sync() pass, on the ranks that skipped it only.
        object.__setattr__(self, "_armed", False)
        #: weak references to the output nodes of the forwards armed since the last
        #: averaging, and a number that changes at each averaging: a node's hook arms a
        #: pass only while its forward's number is current
        object.__setattr__(self, "_forward_nodes", [])
        object.__setattr__(self, "_generation", 0)
        #: whether an armed forward gave no output with a node to hook (a parameter
        #: returned as it is): then the next backward pass that reaches this model averages
        object.__setattr__(self, "_unlinked", False)
        #: forward passes armed since the last averaging: the ranks compare them before
        #: averaging, as a rank whose backward raised before reaching the model (a hook on
        #: the loss) sent nothing, and its next pass would pair with the others' last one
        object.__setattr__(self, "_forwards", 0)
        object.__setattr__(self, "_committed", 0)
        #: how many buckets, in order, this pass has sent
        object.__setattr__(self, "_launched", 0)
        object.__setattr__(self, "_parameter_count", len(parameters))
        #: whether this pass has queued its _end_of_pass (and _leave_failed_pass)
        object.__setattr__(self, "_end_queued", False)
        #: whether this rank left this pass part-way (see _leave_failed_pass)
        object.__setattr__(self, "_left", False)
        #: this pass's parameters that got no gradient on this rank (see _end_of_pass)
        object.__setattr__(self, "_absent", [])
        #: each bucketed parameter's .grad array before this pass (None: no .grad), by id,
        #: put back if the pass is refused
        object.__setattr__(self, "_grads_before", {})
        handles: list[Any] = [
            p.register_post_accumulate_grad_hook(self._grad_accumulated) for p in parameters
        ]
        # The engine keeps its callbacks until removed: let it hold this model only weakly.
        model = weakref.ref(self)

        def grad_ready(param: Tensor, gradient: Any) -> None:
            ddp = model()
            if ddp is not None:
                ddp._grad_ready(param, gradient)

        handles += [_engine.watch_gradient_ready(p, grad_ready) for p in parameters]
        handles.append(_engine.watch_backward_failures(self._backward_failed_before_joining))
        object.__setattr__(self, "_handles", handles)

    # -- construction ---------------------------------------------------------------------------

    def _state_tensors(self) -> list[tuple[str, Tensor]]:
        return [*self.module.named_parameters(), *self.module.named_buffers()]

    def _check_same_model(self, communicator: Communicator) -> None:
        lines = [
            f"{kind} {name}: {t.dtype.name} {tuple(t.shape)}"
            for kind, items in (("parameter", self.module.named_parameters()),
                                ("buffer", self.module.named_buffers()))
            for name, t in items
        ]  # fmt: skip
        digest = hashlib.sha256("\n".join(lines).encode()).digest()
        mine = tuple(int.from_bytes(digest[i : i + 7], "little") for i in range(0, 28, 7))
        work = communicator.allgather_ints(mine)
        work.description = "the check that every rank has the same model"
        work.wait()
        if all(row == mine for row in work.output):
            return
        # They differ: exchange the descriptions themselves to say how.
        text = "\n".join(lines).encode()
        sizes = communicator.allgather_ints((len(text),))
        sizes.wait()
        longest = max(row[0] for row in sizes.output)
        padded = asarray(list(text.ljust(longest, b"\0")) or [0], dtype=_dtypes.uint8)
        gathered = communicator.allgather(padded._array)
        gathered.wait()
        table = padded._device.backend.to_numpy(gathered.output).tolist()  # Dask's have no tolist
        rows = [bytes(int(v) for v in row).rstrip(b"\0").decode() for row in table]
        reference = set(rows[0].splitlines())
        problems = []
        for rank, row in enumerate(rows[1:], start=1):
            theirs = set(row.splitlines())
            only0 = sorted(reference - theirs)
            only_r = sorted(theirs - reference)
            if only0 or only_r:
                problems.append(
                    f"rank {rank} differs from rank 0: rank 0 has [{'; '.join(only0)}], "
                    f"rank {rank} has [{'; '.join(only_r)}]"
                )
            elif row != rows[0]:  # the same tensors, registered in another order
                order = ", ".join(line.split(":")[0] for line in row.splitlines())
                problems.append(
                    f"rank {rank} registers the same tensors in another order than rank 0 "
                    f"({order}); the buckets pair gradients by position, so create the "
                    "submodules and parameters in one order on every rank"
                )
        raise DistributedError(
            f"rank {communicator.rank}: DistributedDataParallel needs the same model on every "
            f"rank, but {' / '.join(problems)}"
        )

    @staticmethod
    def _sync_from_rank0(communicator: Communicator, tensors: list[Tensor]) -> None:
        works = []
        for t in tensors:
            work = communicator.broadcast(t._array, 0)
            works.append((t, work))
        for t, work in works:
            work.wait()
            if work.output is not None and work.output is not t._array:
                t._array = work.output
            t._bump_version()

    @staticmethod
    def _make_buckets(parameters: Sequence[Tensor], cap_mb: float) -> list[_Bucket]:
        cap = cap_mb * 1024 * 1024
        buckets: list[_Bucket] = []
        open_groups: dict[tuple[Any, str], list[Tensor]] = {}
        sizes: dict[tuple[Any, str], int] = {}
        for p in reversed(parameters):
            key = (p._device, p.dtype.name)
            group = open_groups.setdefault(key, [])
            group.append(p)
            sizes[key] = sizes.get(key, 0) + p.size * p.dtype.itemsize
            if sizes[key] >= cap:
                buckets.append(_Bucket(group))
                open_groups[key] = []
                sizes[key] = 0
        buckets.extend(_Bucket(group) for group in open_groups.values() if group)
        return buckets

    # -- forward and backward -------------------------------------------------------------------

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        self._check_previous_backward()
        # A forward under no_grad() or no_sync() between a forward and its backward (a
        # metric) leaves that backward averaging, as PyTorch's: it hooks no output.
        armed = self._sync and _grad_state.enabled
        if self.broadcast_buffers:
            buffers = [b for _, b in self.module.named_buffers()]
            if buffers:
                # Checked as the gradients' averaging is: a rank in another collective (an
                # extra batch, an evaluation on rank 0 alone) would wait here for ever.
                if dist.process_group._require().check_collectives:
                    agree(self._communicator, "ddp_buffers", None, None, len(buffers))
                self._sync_from_rank0(self._communicator, buffers)
        output = self.module(*args, **kwargs)
        if armed:  # (a forward that raised has no backward to count)
            self._link_outputs(output)
            object.__setattr__(self, "_forwards", self._forwards + 1)
        return output

    def _link_outputs(self, output: Any) -> None:
        """Have a backward pass average when it reaches this forward's output nodes.

        A hook on each node, rather than a flag that any next pass reads: a forward whose
        backward never runs must not make a later no_sync() pass average. (plugrad.compile
        runs such a forward eagerly: a replay, without forward's Python, averaged nothing.)
        """
        nodes: list[Node] = []
        _output_nodes(output, nodes, 0)
        if not nodes:
            object.__setattr__(self, "_unlinked", True)
            return
        forward_nodes = self._forward_nodes
        count = len(forward_nodes)
        if count >= 16 and not count & (count - 1):
            # Forwards whose backward never ran (an evaluation with gradients): drop the
            # dead, at each power of two, so that many forwards kept alive cost no more.
            forward_nodes[:] = [ref for ref in forward_nodes if ref() is not None]
        hook = NodeHook(_ArmingHook(weakref.ref(self), self._generation), before=True)
        for node in nodes:
            # Appended directly: registering counts as a new hook for compiled plans, which
            # look for hooks on tensors and modules, never on the nodes of later forwards.
            if node._hooks is None:
                node._hooks = []
            node._hooks.append((None, hook))
            forward_nodes.append(weakref.ref(node))

    def _arm_pass(self, state_of_grad: str) -> None:
        """Average the running backward pass (at its first sight of an armed forward)."""
        if _grad_state.enabled:  # (a pass runs in grad mode only with create_graph)
            self._refuse_higher_order(state_of_grad)
        object.__setattr__(self, "_armed", True)
        self._join_pass()

    def _check_previous_backward(self) -> None:
        if any(b.pieces or b.work is not None for b in self._buckets):
            names = {id(p): n for n, p in self.module.named_parameters()}
            missing = [
                names[id(p)] for b in self._buckets for p in b.members if id(p) not in b.pieces
            ]
            self._reset()
            raise DistributedError(
                "the last backward pass did not average every gradient: it raised part-way, or "
                f"gave no gradient to some parameters ({', '.join(missing) or 'unknown'}); "
                "DistributedDataParallel needs every parameter that requires grad to take part "
                "in the loss (freeze unused ones with requires_grad_(False) before wrapping)"
            )

    def _reset(self) -> None:
        for bucket in self._buckets:
            bucket.work = None
            bucket.sent = None
            bucket.pieces.clear()
        object.__setattr__(self, "_committed", 0)
        object.__setattr__(self, "_launched", 0)
        object.__setattr__(self, "_end_queued", False)
        object.__setattr__(self, "_left", False)
        object.__setattr__(self, "_armed", False)  # until a pass reaches an armed forward
        object.__setattr__(self, "_forwards", 0)
        self._forward_nodes.clear()
        object.__setattr__(self, "_generation", self._generation + 1)
        object.__setattr__(self, "_unlinked", False)
        self._absent.clear()
        self._grads_before.clear()

    def _grad_ready(self, param: Tensor, gradient: Any) -> None:
        """During backward: ``param``'s gradient for this pass is final; put it in its bucket."""
        if not self._armed:
            if not self._unlinked:
                return
            self._arm_pass(".grad is left as it was before this pass")
        if gradient is None:
            return
        before = param.grad
        if before is None:
            self._grads_before[id(param)] = None
        else:  # accumulated under no_sync, or not zeroed
            # (a copy: backward adds into .grad's memory, and a refused pass puts it back)
            self._grads_before[id(param)] = before._device.xp.asarray(before._array, copy=True)
        if any(not isinstance(h, PostAccumulateGradHook) for h in param._hooks or ()):
            return  # a gradient hook may still change it; take it when .grad is updated
        array = gradient._array if isinstance(gradient, Tensor) else gradient
        self._fill(param, array if before is None else before._array + array)

    def _grad_accumulated(self, param: Tensor) -> None:
        """After backward updated ``.grad``: bucket what was not bucketed yet; finish at the end."""
        if not self._armed:
            if not self._unlinked:
                return
            # (a pass restricted with inputs=, of a forward whose output has no node: the
            # first this model sees of it is here)
            self._arm_pass(
                ".grad already holds this rank's own gradient of this pass (a pass restricted "
                "with inputs= adds it before DistributedDataParallel sees it, where the "
                "model's output has no grad_fn): set it to None (model.zero_grad()) before "
                "going on"
            )
        bucket = self._bucket_of[id(param)]
        if id(param) not in bucket.pieces and param.grad is not None:
            self._fill(param, param.grad._array)
        object.__setattr__(self, "_committed", self._committed + 1)
        if self._committed == self._parameter_count:
            self._finish_backward()

    def _refuse_higher_order(self, state_of_grad: str) -> NoReturn:
        """Refuse a backward pass with ``create_graph=True``, at its first gradient.

        Its ``.grad`` would hold the averaged values but this rank's own graph: a gradient
        penalty on ``.grad`` would differ on every rank. Raised before anything is
        bucketed (where the pass reaches the model's output: before any ``.grad`` is
        written, ``inputs=`` or not); the engine then has this rank leave the pass (see
        :meth:`_backward_failed_before_joining`), so ranks that average are not left waiting.
        """
        raise NotSupportedError(
            f"rank {self._communicator.rank}: backward(create_graph=True) through "
            "DistributedDataParallel: it does not synchronise higher-order gradients (.grad "
            "would be averaged but keep this rank's own graph, so a penalty on it would differ "
            "on every rank). Compute the penalty from plugrad.autograd.grad(loss, "
            "model.parameters(), create_graph=True) and call (loss + penalty).backward() "
            f"without create_graph, or run the model without DistributedDataParallel. "
            f"{state_of_grad}"
        )

    def _join_pass(self) -> None:
        """At this rank's first gradient of a pass: have the engine call back at its end,
        and if it fails part-way."""
        if not self._end_queued:
            _engine.queue_callback(self._end_of_pass)
            _engine.queue_failure_callback(self._leave_failed_pass)
            object.__setattr__(self, "_end_queued", True)

    def _fill(self, param: Tensor, array: Any) -> None:
        bucket = self._bucket_of[id(param)]
        # Divided by the number of ranks here, while backward goes on, rather than after the
        # all-reduce, where nothing is left to overlap with: the all-reduce then sums.
        size = self._communicator.size
        xp = bucket.device.xp
        flat = xp.reshape(array, (-1,))
        pieces = bucket.pieces
        pieces[id(param)] = flat / size if size > 1 else flat
        if not self._launch_full_buckets():
            # Let MPI progress the transfers already in flight.
            for other in self._buckets:
                if other.work is not None:
                    other.work.is_completed()

    def _launch_full_buckets(self) -> bool:
        """Send the full buckets not sent yet, in bucket order; return whether any was sent.

        In order, not as they fill: every rank must start the same all-reduces in the same
        order, and where the order of backward depends on the data, buckets fill in another
        order on each rank (the ranks' all-reduces would pair different buckets).
        """
        buckets, index = self._buckets, self._launched
        while index < len(buckets) and len(buckets[index].pieces) == len(buckets[index].members):
            if index == 0:
                try:
                    self._agree_on_this_backward()
                except Exception:
                    # Every rank raises there, so none waits for this pass's buckets.
                    self._restore_grads()
                    self._reset()
                    raise
            bucket = buckets[index]
            pieces = bucket.pieces
            flats = [pieces[id(p)] for p in bucket.members]
            if index == len(buckets) - 1:
                # One more element: how many parameters got no gradient on this rank, summed
                # over the ranks by the all-reduce, so every rank learns of any (buckets are
                # sent in order: this one goes last, when the others are all sent).
                flats.append(self._absent_count(bucket, flats[0]))
            bucket.sent = bucket.device.xp.concat(flats)
            bucket.work = self._communicator.allreduce(bucket.sent, ReduceOp.SUM)
            index += 1
        launched = index != self._launched
        object.__setattr__(self, "_launched", index)
        return launched

    def _absent_count(self, bucket: _Bucket, like: Any) -> Any:
        xp = bucket.device.xp
        if self._left:
            # Below any sum of the other ranks' counts: the sum is negative where a rank left
            # (exact enough in any float dtype, infinite included).
            left = -2.0 * (self._parameter_count * self._communicator.size + 1)
            return xp.full((1,), left, dtype=like.dtype, device=bucket.device.native)
        if self._absent:
            return xp.full((1,), len(self._absent), dtype=like.dtype, device=bucket.device.native)
        if bucket.none_absent is None:
            bucket.none_absent = xp.zeros((1,), dtype=like.dtype, device=bucket.device.native)
        return bucket.none_absent

    def _end_of_pass(self) -> None:
        """At the end of a backward pass: complete one in which some parameter got no gradient.

        Its buckets were never sent, while the other ranks (whose backward gave every
        gradient) wait for them: this rank sends them with zeros in those places, and
        counts them in the last bucket, so that every rank raises rather than one going on
        with its own gradients and the others waiting forever.
        """
        if not self._committed:
            # Finished, or it gave this model no gradient (backward(inputs=[x]) of its input
            # alone): local, and a later pass through the same forward still averages.
            object.__setattr__(self, "_armed", False)
            object.__setattr__(self, "_end_queued", False)
            return
        self._absent.extend(self._zeros_where_missing(self._buckets))
        self._launch_full_buckets()
        self._finish_backward()

    @staticmethod
    def _zeros_where_missing(buckets: list[_Bucket]) -> list[Tensor]:
        """Zeros as this pass's gradient of each member that has none; return those members."""
        missing = []
        for bucket in buckets:
            xp = bucket.device.xp
            for p in bucket.members:
                if id(p) not in bucket.pieces:
                    missing.append(p)
                    bucket.pieces[id(p)] = xp.zeros(
                        (p.size,), dtype=p._array.dtype, device=bucket.device.native
                    )
        return missing

    def _leave_failed_pass(self) -> None:
        """When backward raises part-way on this rank: send what the other ranks wait for.

        They wait for every bucket of the pass; were they left waiting, this rank's next
        pass would pair its buckets with theirs of this one (wrong numbers, or a raw error
        where the sizes differ). This rank sends the buckets it has not sent, with zeros
        and a mark in the last one that makes every other rank raise DistributedError,
        puts each .grad back as it was before the pass, and lets its own error go on.
        """
        if not self._end_queued:
            return  # the pass ended already (refused: it put .grad back itself)
        if self._launched < len(self._buckets):
            self._zeros_where_missing(self._buckets[self._launched :])
            object.__setattr__(self, "_left", True)
            self._launch_full_buckets()
        try:
            for bucket in self._buckets:
                if bucket.work is not None:
                    bucket.work.wait()
        finally:
            self._restore_grads()
            self._reset()

    def _backward_failed_before_joining(self) -> None:
        """A backward pass raised on this rank after a forward, before this model's first
        gradient (a hook on the loss): leave the pass the other ranks wait in, as
        :meth:`_leave_failed_pass` does; they raise, and the next pass pairs rightly.

        Whether the failed pass was one of an armed forward cannot be told (it did not reach
        it): it is taken to be one while that forward's graph is alive (its backward may
        still run) and not where the graph is gone (a skipped backward, then a failing
        backward of a no_sync() forward, which the other ranks run locally)."""
        if self._end_queued:
            return
        if not self._unlinked and all(ref() is None for ref in self._forward_nodes):
            return
        object.__setattr__(self, "_end_queued", True)
        self._leave_failed_pass()

    def _agree_on_this_backward(self) -> None:
        """Check, once per backward pass, that every rank averages gradients now.

        The buckets' all-reduces themselves carry no check (one per bucket would cost a
        round trip each): a rank running one more backward pass than another (an extra
        batch) would pair its all-reduces with the other's next collective, and both would
        go on with wrong numbers. With the process group's ``check_collectives``, every
        rank raises here instead, naming what each was doing.
        """
        group = dist.process_group._require()
        if group.check_collectives:
            agree(
                self._communicator, "ddp_gradients", None, None, len(self._buckets),
                self._forwards,
            )  # fmt: skip

    def _finish_backward(self) -> None:
        unfinished = [b for b in self._buckets if b.work is None]
        if unfinished:
            self._check_previous_backward()
        reduced_arrays = []
        for bucket in self._buckets:
            work = bucket.work
            assert work is not None
            work.wait()
            reduced_arrays.append(work.output if work.output is not None else bucket.sent)
        last = self._buckets[-1]
        absent = float(last.device.backend.to_numpy(reduced_arrays[-1][-1:])[0].real)
        if absent < 0:
            self._refuse(
                "another rank raised an error part-way and left the pass",
                ": no gradient could be averaged (see that rank's error)",
            )
        if absent:
            names = {id(p): n for n, p in self.module.named_parameters()}
            mine = [names[id(p)] for p in self._absent]
            self._refuse(
                f"{', '.join(mine)} got no gradient on this rank"
                if mine
                else f"{round(absent)} parameter(s) got no gradient on another rank",
                "; DistributedDataParallel averages every parameter that requires grad in every "
                "pass, so each must take part in the loss on every rank (freeze unused ones with "
                "requires_grad_(False) before wrapping)",
            )
        for bucket, reduced in zip(self._buckets, reduced_arrays):
            xp = bucket.device.xp
            # Views of the reduced array, which the next pass does not write (it joins anew).
            for p in bucket.members:
                start, stop = bucket.offsets[id(p)]
                p.grad._array = xp.reshape(reduced[start:stop], p.shape)
        self._reset()

    def _restore_grads(self) -> None:
        """Put back each .grad this pass changed as it was before it."""
        for bucket in self._buckets:
            for p in bucket.members:
                if id(p) in self._grads_before:
                    before = self._grads_before[id(p)]
                    if before is None:
                        p.grad = None
                    else:
                        p.grad._array = before

    def _refuse(self, what: str, advice: str = "") -> None:
        """Raise on this rank for a pass that cannot be averaged, .grad put back as it was."""
        self._restore_grads()
        rank = self._communicator.rank
        self._reset()
        raise DistributedError(
            f"rank {rank}: in this backward pass {what}{advice}. .grad is left as it was "
            "before this pass"
        )

    @contextlib.contextmanager
    def no_sync(self) -> Iterator[None]:
        """The backward passes of forward passes run inside only accumulate local gradients
        (no communication), wherever the backward runs, as PyTorch's.

        The first backward pass of a forward run after the block averages the accumulated
        gradients; so does a backward still to come of a forward run before the block
        (a forward inside does not cancel it). A backward pass averages only where it goes
        through the output of a forward run outside the block: one of a forward inside it
        stays local even after a forward whose backward was skipped.

        Examples
        --------
        ::

            with model.no_sync():
                loss_fn(model(x1), y1).backward()   # local only
            loss_fn(model(x2), y2).backward()       # averages the sum of both
        """
        previous = self._sync
        object.__setattr__(self, "_sync", False)
        try:
            yield
        finally:
            object.__setattr__(self, "_sync", previous)

    def _remove_hooks(self) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles.clear()


class _ArmingHook:
    """The pre-hook on an armed forward's output nodes: averages the backward pass reaching
    it, if no averaging happened since that forward (a second backward through a retained
    graph is local, as PyTorch's). Holds the model weakly: the graph may outlive it."""

    __slots__ = ("generation", "model")

    def __init__(self, model: weakref.ref[DistributedDataParallel], generation: int) -> None:
        self.model = model
        self.generation = generation

    def __call__(self, grad_outputs: Any) -> None:
        ddp = self.model()
        if ddp is None or ddp._armed or ddp._generation != self.generation:
            return
        if _engine._pass.queued is None:
            return  # plugrad.autograd.grad(): no .grad to average
        ddp._arm_pass(".grad is left as it was before this pass")


def _output_nodes(output: Any, nodes: list[Node], depth: int) -> None:
    """Add to ``nodes`` the graph node of each tensor in ``output`` (tensors, and sequences,
    mappings and dataclasses of them, as PyTorch looks for them), each once."""
    if isinstance(output, Tensor):
        edge = output._edge
        if edge is not None:
            node = split_edge(edge)[0]
            if isinstance(node, Node) and not any(n is node for n in nodes):
                nodes.append(node)
        return
    if depth > 8:
        return
    if isinstance(output, (list, tuple)):
        values: Any = output
    elif isinstance(output, dict):
        values = output.values()
    elif dataclasses.is_dataclass(output) and not isinstance(output, type):
        values = [getattr(output, field.name) for field in dataclasses.fields(output)]
    else:
        return
    for value in values:
        _output_nodes(value, nodes, depth + 1)

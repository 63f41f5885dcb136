"""F.affine_grid and F.grid_sample against PyTorch's: every mode, padding mode and corner
alignment, values and the gradients of the input, the grid and theta."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest

import plugrad

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(0)
IMAGE = RNG.standard_normal((2, 3, 4, 5))
GRID = RNG.uniform(-1.3, 1.3, (2, 3, 6, 2))  # points outside [-1, 1] too
THETA = RNG.standard_normal((2, 2, 3)) * 0.5


def _weighted_sum(lib, out):
    return (out * lib.arange(out.numel(), dtype=out.dtype).reshape(out.shape)).sum()


VOLUME = RNG.standard_normal((2, 3, 3, 4, 5))
VOLUME_GRID = RNG.uniform(-1.3, 1.3, (2, 2, 3, 4, 3))
MODES = ("bilinear", "nearest", "bicubic")
PADDINGS = ("zeros", "border", "reflection")


@pytest.mark.parametrize(
    ("mode", "padding_mode", "align_corners", "volume"),
    [
        (*case, volume)
        for case in itertools.product(MODES, PADDINGS, (False, True))
        for volume in (False, True)
        if not (volume and case[0] == "bicubic")  # (PyTorch's bicubic takes images only)
    ],
)
def test_grid_sample_values_and_gradients_are_pytorchs(
    mode, padding_mode, align_corners, volume
) -> None:
    # Bicubic and 5-d (trilinear, nearest) input were not there: NotImplementedError.
    found = []
    for lib in (plugrad, torch):
        data, points = (VOLUME, VOLUME_GRID) if volume else (IMAGE, GRID)
        image, grid = lib.tensor(data, requires_grad=True), lib.tensor(points, requires_grad=True)
        out = lib.nn.functional.grid_sample(
            image, grid, mode=mode, padding_mode=padding_mode, align_corners=align_corners
        )
        _weighted_sum(lib, out).backward()
        found.append([out.detach().numpy(), image.grad.numpy(), grid.grad.numpy()])
    for ours, theirs in zip(*found, strict=True):
        np.testing.assert_allclose(ours, theirs, atol=1e-9)


@pytest.mark.parametrize("padding_mode", ["border", "reflection"])
def test_points_exactly_on_the_edge_get_pytorchs_grid_gradient(padding_mode) -> None:
    # An identity grid's first and last points lie on the edge; their gradient took the slope
    # toward the zero past it (-10.5 here for border, where PyTorch gives 0).
    image = np.arange(12.0).reshape(1, 1, 3, 4)
    points = np.array([[[[1.0, 0.0], [-1.0, 0.0], [0.5, 0.0], [1.0, 1.0], [-1.0, -1.0]]]])
    found = []
    for lib in (plugrad, torch):
        grid = lib.tensor(points, requires_grad=True)
        out = lib.nn.functional.grid_sample(
            lib.tensor(image), grid, padding_mode=padding_mode, align_corners=True
        )
        _weighted_sum(lib, out).backward()
        found.append([out.detach().numpy(), grid.grad.numpy()])
    for ours, theirs in zip(*found, strict=True):
        np.testing.assert_allclose(ours, theirs, atol=1e-12)
    assert found[0][1][0, 0, 0, 0] == 0.0


@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("size", [(2, 3, 4, 5), (2, 1, 1, 3)])
def test_affine_grid_and_its_gradient_are_pytorchs(size, align_corners) -> None:
    found = []
    for lib in (plugrad, torch):
        theta = lib.tensor(THETA, requires_grad=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # (PyTorch's about a size of 1 with align_corners)
            grid = lib.nn.functional.affine_grid(theta, size, align_corners=align_corners)
        _weighted_sum(lib, grid).backward()
        found.append([grid.detach().numpy(), theta.grad.numpy()])
    for ours, theirs in zip(*found, strict=True):
        np.testing.assert_allclose(ours, theirs, atol=1e-12)
    volume = RNG.standard_normal((2, 3, 4))
    ours, theirs = (
        lib.nn.functional.affine_grid(lib.tensor(volume), (2, 1, 3, 4, 5), align_corners)
        for lib in (plugrad, torch)
    )
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), atol=1e-12)


def test_an_affine_grid_backpropagates_again_as_pytorchs() -> None:
    # Made by a matmul, its saved values were freed by the first backward (GraphFreedError);
    # PyTorch's keeps none, so a grid made once serves several backward passes.
    found = []
    for lib in (plugrad, torch):
        theta = lib.tensor(THETA, requires_grad=True)
        grid = lib.nn.functional.affine_grid(theta, (2, 3, 4, 5), align_corners=False)
        for _ in range(2):
            _weighted_sum(lib, grid).backward()
        (again,) = lib.autograd.grad(_weighted_sum(lib, grid), theta)
        found.append([theta.grad.numpy(), again.numpy()])
    for ours, theirs in zip(*found, strict=True):
        np.testing.assert_allclose(ours, theirs, atol=1e-12)


def test_a_spatial_transformer_step_trains_as_pytorchs() -> None:
    # The spatial transformer tutorial's core: theta from a layer, the image resampled.
    found = []
    for lib in (plugrad, torch):
        localization = lib.nn.Linear(20, 6).double()
        with lib.no_grad():
            localization.weight.copy_(lib.tensor(np.linspace(-0.01, 0.01, 120).reshape(6, 20)))
            localization.bias.copy_(lib.tensor([1.0, 0.0, 0.0, 0.0, 1.0, 0.0]))
        image = lib.tensor(IMAGE[:, :1])
        theta = localization(image.reshape(2, 20)).view(-1, 2, 3)
        grid = lib.nn.functional.affine_grid(theta, image.size(), align_corners=False)
        out = lib.nn.functional.grid_sample(image, grid, align_corners=False)
        (out**2).mean().backward()
        found.append([out.detach().numpy(), localization.weight.grad.numpy()])
    for ours, theirs in zip(*found, strict=True):
        np.testing.assert_allclose(ours, theirs, rtol=1e-9, atol=1e-12)


def test_what_is_not_there_or_wrong_is_refused_clearly() -> None:
    F = plugrad.nn.functional
    image, grid = plugrad.tensor(IMAGE), plugrad.tensor(GRID)
    with pytest.raises(plugrad.errors.InvalidArgumentError, match="mode must be"):
        F.grid_sample(image, grid, mode="cubic")  # (a bare ValueError)
    volume, volume_grid = plugrad.tensor(VOLUME), plugrad.tensor(VOLUME_GRID)
    with pytest.raises(plugrad.errors.ShapeError, match=r"bicubic.*4-d"):
        F.grid_sample(volume, volume_grid, mode="bicubic")  # (as PyTorch: images only)
    with pytest.raises(plugrad.errors.ShapeError, match="empty spatial axis"):
        F.grid_sample(plugrad.zeros(1, 1, 0, 3), plugrad.zeros(1, 2, 2, 2))  # (index error)
    with pytest.raises(plugrad.errors.ShapeError, match="3 coordinates"):
        F.grid_sample(volume, volume_grid[..., :2])
    with pytest.raises(ValueError, match="padding_mode"):
        F.grid_sample(image, grid, padding_mode="wrap")
    with pytest.raises(plugrad.errors.ShapeError, match="grid"):
        F.grid_sample(image, grid[..., :1])
    with pytest.raises(plugrad.errors.ShapeError, match="theta"):
        F.affine_grid(plugrad.tensor(THETA), (2, 3, 4, 5, 6))


def test_a_nan_coordinate_reads_as_outside_the_image_with_zeros_padding() -> None:
    # A NaN became an integer index: IndexOutOfRangeError from take_along_axis().
    image = plugrad.arange(9.0).reshape(1, 1, 3, 3)
    grid = plugrad.tensor([[[[float("nan"), 0.0], [0.0, 0.0]]]])
    sample = plugrad.nn.functional.grid_sample
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # NumPy's, of nan arithmetic
        bilinear = sample(image, grid, align_corners=False)
        nearest = sample(image, grid, mode="nearest")
    assert np.isnan(bilinear[0, 0, 0, 0].item()) and nearest[0, 0, 0, 0].item() == 0.0
    assert bilinear[0, 0, 0, 1].item() == nearest[0, 0, 0, 1].item() == 4.0  # the centre


NAN, INF = float("nan"), float("inf")
#: Points with a NaN or infinite coordinate, each in one axis, the others at the centre.
STRAY_POINTS = [[NAN, 0.0], [INF, 0.0], [-INF, 0.0], [0.0, NAN], [0.0, INF], [0.0, -INF]]
STRAY_VOLUME_POINTS = [
    [NAN, 0.0, 0.0],
    [0.0, NAN, 0.0],
    [0.0, 0.0, NAN],
    [INF, 0.0, 0.0],
    [-INF, 0.0, 0.0],
    [0.0, 0.0, INF],
    [0.0, -INF, 0.0],
]


@pytest.mark.parametrize(
    ("mode", "padding_mode", "align_corners", "volume"),
    [
        case
        for case in itertools.product(MODES, ("border", "reflection"), (False, True), (False, True))
        if not (case[3] and case[0] == "bicubic")
    ],
)
def test_nan_and_infinite_coordinates_are_placed_as_pytorchs(
    mode, padding_mode, align_corners, volume
) -> None:
    # They read as outside: NaN (bilinear) or 0 (nearest) where PyTorch clamps them into the
    # image: a NaN (and, reflecting, an infinity) to the first pixel of an image, to the last
    # of a volume; bicubic gives NaN.
    shape = (1, 2, 3, 4, 5) if volume else (1, 2, 4, 5)
    data = np.arange(float(np.prod(shape))).reshape(shape)
    points = np.array([[STRAY_VOLUME_POINTS if volume else STRAY_POINTS]])
    points = points[:, None] if volume else points
    found = []
    for lib in (plugrad, torch):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # NumPy's, of nan arithmetic
            out = lib.nn.functional.grid_sample(
                lib.tensor(data),
                lib.tensor(points),
                mode=mode,
                padding_mode=padding_mode,
                align_corners=align_corners,
            )
        found.append(out.numpy())
    np.testing.assert_array_equal(*found)
    assert np.isnan(found[0]).all() if mode == "bicubic" else np.isfinite(found[0]).all()


@pytest.mark.parametrize("volume", [False, True])
@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
def test_infinite_coordinates_clipped_by_border_padding_get_pytorchs_gradients(
    mode, volume
) -> None:
    # (PyTorch's backward of a NaN point crashes or disagrees with its forward; an infinity
    # under border padding is where its gradients can be compared.)
    shape = (1, 2, 3, 4, 5) if volume else (1, 2, 4, 5)
    data = RNG.standard_normal(shape)
    stray = [p for p in (STRAY_VOLUME_POINTS if volume else STRAY_POINTS) if not np.isnan(p).any()]
    points = np.array([[[*stray, [0.3] * len(stray[0])]]])
    points = points[:, None] if volume else points
    found = []
    for lib in (plugrad, torch):
        image, grid = lib.tensor(data, requires_grad=True), lib.tensor(points, requires_grad=True)
        out = lib.nn.functional.grid_sample(
            image, grid, mode=mode, padding_mode="border", align_corners=False
        )
        _weighted_sum(lib, out).backward()
        found.append([out.detach().numpy(), image.grad.numpy(), grid.grad.numpy()])
    for ours, theirs in zip(*found, strict=True):
        np.testing.assert_allclose(ours, theirs, atol=1e-12)


@pytest.mark.parametrize("padding_mode", ["border", "reflection"])
@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
def test_a_nan_coordinate_has_a_zero_gradient_and_reads_its_pixel(mode, padding_mode) -> None:
    # Its pixel gets the gradient of what it read; the NaN coordinate none (not NaN).
    image = plugrad.arange(20.0).reshape(1, 1, 4, 5).requires_grad_()
    grid = plugrad.tensor([[[[NAN, 0.0]]]], requires_grad=True)
    out = plugrad.nn.functional.grid_sample(
        image, grid, mode=mode, padding_mode=padding_mode, align_corners=False
    )
    out.sum().backward()
    assert out.item() == (7.5 if mode == "bilinear" else 10.0)  # (column 0, row 1.5)
    np.testing.assert_array_equal(
        grid.grad.numpy(), [[[[0.0, 0.0 if mode == "nearest" else 10.0]]]]
    )
    expected = np.zeros(20)
    expected[[5, 10] if mode == "bilinear" else [10]] = 0.5 if mode == "bilinear" else 1.0
    np.testing.assert_array_equal(image.grad.numpy().ravel(), expected)

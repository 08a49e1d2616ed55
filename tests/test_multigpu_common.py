"""The MultiGPU task's shared pieces: DenseNet-121's layout and start, the equivalence check, the
images' augmentation and normalisation, the validation AUC, and the synthetic X-rays."""
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from common import densenet, flops, xray_images
from common.loaders import chestxray
from common.params import get_params

ROOT = Path(__file__).resolve().parent.parent


def test_densenet121_has_its_120_convolutions_and_7_million_weights():
    shapes = densenet.conv_shapes()
    assert len(shapes) == 120
    assert shapes[0] == (7, 7, 3, 64) and shapes[1] == (1, 1, 64, 128) and shapes[2] == (3, 3, 128, 32)
    # The first transition halves the 64 + 6 × 32 = 256 channels of block 1.
    assert shapes[13] == (1, 1, 256, 128)
    weights = densenet.initial_weights(14)
    total = sum(kernel.size for kernel in weights["convs"]) + weights["dense/kernel"].size + 14
    assert total == 6_884_558  # torchvision's densenet121(num_classes=14) minus batch norm's 83,648
    assert [kernel.shape for kernel in weights["convs"]] == shapes
    # He-normal: each kernel's spread follows its fan-in.
    assert weights["convs"][2].std() == pytest.approx(np.sqrt(2 / (9 * 128)), rel=0.05)
    assert np.array_equal(densenet.initial_weights(14)["convs"][5], weights["convs"][5])
    assert tuple(get_params("MultiGPU", "full")["block_layers"]) == densenet.BLOCK_LAYERS
    assert get_params("MultiGPU", "quick")["block_layers"] == get_params("MultiGPU", "full")["block_layers"]


def test_the_smoke_densenet_keeps_the_layout_at_two_dense_layers_per_block():
    """Stem, four dense blocks and three transitions, as DenseNet-121, with fewer layers per block:
    the classifier reads the channels the last block ends with."""
    block_layers = get_params("MultiGPU", "smoke")["block_layers"]
    assert block_layers == (2, 2, 2, 2)
    shapes = densenet.conv_shapes(block_layers)
    assert len(shapes) == 1 + 2 * 8 + 3
    # Each block adds 2 × 32 channels to the 64 it starts with; each transition halves the 128.
    assert shapes[5] == (1, 1, 128, 64) and shapes[6] == (1, 1, 64, 128)
    assert densenet.features(block_layers) == 128 and densenet.features() == 1024
    weights = densenet.initial_weights(14, block_layers)
    assert [kernel.shape for kernel in weights["convs"]] == shapes and weights["dense/kernel"].shape == (128, 14)
    assert flops.densenet121_multiply_adds(32, block_layers) < flops.densenet121_multiply_adds(32) / 3


def test_densenet121_work_is_the_published_2_9_gmacs():
    assert flops.densenet121_multiply_adds(224) / 1e9 == pytest.approx(2.87, rel=0.02)
    stem = 112 * 112 * 7 * 7 * 3 * 64  # its input gradient is not computed
    assert flops.flops_per_item("MultiGPU") == 2 * (3 * flops.densenet121_multiply_adds(224) - stem)


def test_the_equivalence_check_compares_the_two_updates_relative_to_the_one_device_update():
    start = [np.ones((2, 3), np.float32), np.zeros(4, np.float32)]
    after = [np.full((2, 3), 0.5, np.float32), np.full(4, 0.5, np.float32)]
    update = densenet.weights_update(start, after)
    assert update.dtype == np.float64 and update.tolist() == [-0.5] * 6 + [0.5] * 4
    assert densenet.update_relative_error(update, update) == 0.0
    same = densenet.data_parallel_check(([0.9, 0.5], update), ([0.9, 0.5 + 1e-6], update * (1 + 1e-6)), 2)
    assert same["data_parallel_update_relative_error"] == pytest.approx(1e-6)
    assert same["data_parallel_update_relative_error"] <= same["data_parallel_update_tolerance"] / 100
    assert same["data_parallel_loss_difference"] == pytest.approx(1e-6)
    assert same["data_parallel_loss_fell"] is True and same["data_parallel_devices"] == 2
    # A sum where the mean belongs doubles one step's update on 2 devices: 100 % off.
    summed = densenet.data_parallel_check(([0.9, 0.5], update), ([0.9, 0.4], 2 * update), 2)
    assert summed["data_parallel_update_relative_error"] == pytest.approx(1.0)
    assert summed["data_parallel_update_relative_error"] >= 100 * summed["data_parallel_update_tolerance"]
    stuck = densenet.data_parallel_check(([0.5, 0.6], update), ([0.5, 0.6], update), 2)
    assert stuck["data_parallel_loss_fell"] is False
    with pytest.raises(ValueError, match="1 losses on 2 devices, 2 on one"):
        densenet.data_parallel_check(([1, 2], update), ([1], update), 2)
    with pytest.raises(ValueError, match="9 weights on N devices, 10 on one"):
        densenet.update_relative_error(update, update[1:])
    with pytest.raises(ValueError, match="did not move"):
        densenet.update_relative_error(0 * update, update)


def test_a_one_device_run_checks_only_that_its_own_steps_lower_the_loss():
    update = np.ones(3)
    assert densenet.one_device_check(([0.9, 0.5], update)) == {
        "data_parallel_devices": 1, "data_parallel_losses": [0.9, 0.5], "data_parallel_loss_fell": True}
    assert densenet.one_device_check(([0.5, 0.6], update))["data_parallel_loss_fell"] is False
    assert densenet.one_device_check(([0.5], update))["data_parallel_loss_fell"] is False  # one step shows nothing


def test_the_replica_check_compares_every_copy_with_the_first_and_counts_them():
    """After the timed epochs: all-reduced copies agree to the bit; copies each trained on its own
    share part by tens of per cent; a single copy where N belong has nothing to agree."""
    rng = np.random.default_rng(0)
    update = rng.normal(size=50)
    same = densenet.replica_check([update, update.copy()], 2)
    assert same["data_parallel_replica_relative_error"] == 0.0 and same["data_parallel_replicas"] == 2
    assert same["data_parallel_replica_tolerance"] == densenet.REPLICA_TOLERANCE and same["data_parallel_replica_devices"] == 2
    assert "data_parallel_batch_shards" not in same
    parted = densenet.replica_check([update, update, update + 0.3 * rng.normal(size=50)], 3, batch_shards=3)
    assert parted["data_parallel_replica_relative_error"] >= 100 * densenet.REPLICA_TOLERANCE
    assert parted["data_parallel_replicas"] == 3 and parted["data_parallel_batch_shards"] == 3
    alone = densenet.replica_check([update], 2)
    assert alone["data_parallel_replica_relative_error"] == float("inf") and alone["data_parallel_replicas"] == 1


def test_a_training_view_depends_on_epoch_and_index_only():
    image = np.arange(40 * 40, dtype=np.uint16).reshape(40, 40).astype(np.uint8)
    view = xray_images.train_view(image, 32, epoch=0, index=7)
    assert view.shape == (32, 32)
    assert np.array_equal(view, xray_images.train_view(image, 32, epoch=0, index=7))
    views = {xray_images.train_view(image, 32, epoch, 7).tobytes() for epoch in range(8)}
    assert len(views) > 4  # crops and flips change from epoch to epoch
    assert np.array_equal(xray_images.valid_view(image, 32), image[4:36, 4:36])


def test_normalisation_repeats_the_grey_on_three_channels_in_either_layout():
    params = get_params("MultiGPU", "smoke")
    grey = np.full((2, 4, 4), 255, np.uint8)
    nchw = xray_images.normalise(grey, params["image_mean"], params["image_sd"], "NCHW")
    nhwc = xray_images.normalise(grey, params["image_mean"], params["image_sd"], "NHWC")
    assert nchw.shape == (2, 3, 4, 4) and nhwc.shape == (2, 4, 4, 3) and nchw.dtype == np.float32
    assert nchw[0, :, 0, 0] == pytest.approx((1 - np.array(params["image_mean"])) / params["image_sd"])
    assert np.array_equal(nchw.transpose(0, 2, 3, 1), nhwc)
    with pytest.raises(ValueError, match="layout"):
        xray_images.normalise(grey, params["image_mean"], params["image_sd"], "HWC")


def test_each_device_takes_an_equal_contiguous_slice_of_every_global_batch():
    global_batches = np.arange(12).reshape(2, 6)
    assert xray_images.rank_batches(global_batches, 0, 2).tolist() == [[0, 1, 2], [6, 7, 8]]
    assert xray_images.rank_batches(global_batches, 1, 2).tolist() == [[3, 4, 5], [9, 10, 11]]
    assert np.array_equal(xray_images.rank_batches(global_batches, 0, 1), global_batches)


def test_mean_auc_is_the_rank_statistic_of_each_label_with_both_classes():
    labels = np.array([[1, 0, 1], [0, 0, 1], [1, 0, 0], [0, 0, 0]], np.float32)
    scores = np.array([[0.9, 0.1, 0.2], [0.1, 0.2, 0.8], [0.8, 0.3, 0.5], [0.2, 0.4, 0.5]])
    assert xray_images.auc(labels[:, 0], scores[:, 0]) == 1.0
    assert xray_images.auc(labels[:, 1], scores[:, 1]) is None  # one class only: no AUC
    # Label 2: positives 0.2, 0.8 against negatives 0.5, 0.5: one win, one loss of each pair.
    assert xray_images.auc(labels[:, 2], scores[:, 2]) == 0.5
    assert xray_images.mean_auc(labels, scores) == 0.75
    assert xray_images.auc([1, 0], [0.5, 0.5]) == 0.5  # a tie counts half
    assert np.isnan(xray_images.mean_auc(np.zeros((3, 2)), np.ones((3, 2))))


def test_processes_writing_the_same_synthetic_xrays_at_once_all_get_them(tmp_path):
    """The processes of a run across two nodes on one machine fill an empty cache at the same time
    (a shared temporary name once let one process move another's file away: FileNotFoundError)."""
    code = ("from common.loaders import chestxray; import numpy as np; "
            "names = [f'{i:08d}_000.png' for i in range(40)]; "
            "paths = chestxray.synthetic_pngs(names, size=128); "
            "assert all(np.array_equal(np.asarray(__import__('PIL.Image').Image.open(p)), "
            "chestxray.synthetic_image(p.name, 128)) for p in paths); print('ok')")
    env = dict(os.environ, ROSETTA_CACHE=str(tmp_path))
    writers = [subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True) for _ in range(4)]
    outcomes = [writer.communicate(timeout=300) for writer in writers]
    assert [writer.returncode for writer in writers] == [0] * 4, [err[-2000:] for _, err in outcomes]
    folder = tmp_path / "data" / "chestxray" / "synthetic-128"
    assert sorted(path.name for path in folder.iterdir()) == [f"{i:08d}_000.png" for i in range(40)]


def test_synthetic_xrays_are_deterministic_pngs_decoded_and_resized_by_pillow(tmp_path, monkeypatch):
    monkeypatch.setenv("ROSETTA_CACHE", str(tmp_path))
    image = chestxray.synthetic_image("00000001_000.png", size=64)
    assert image.dtype == np.uint8 and image.shape == (64, 64)
    assert np.array_equal(image, chestxray.synthetic_image("00000001_000.png", size=64))
    assert not np.array_equal(image, chestxray.synthetic_image("00000002_000.png", size=64))
    paths = chestxray.synthetic_pngs(["a.png", "b.png"], size=64)
    assert [path.name for path in paths] == ["a.png", "b.png"] and all(path.exists() for path in paths)
    assert np.array_equal(xray_images.decode(paths[0], 64), chestxray.synthetic_image("a.png", 64))
    assert xray_images.decode_all([str(path) for path in paths], 40).shape == (2, 40, 40)
    params = get_params("MultiGPU", "smoke")
    x, y = xray_images.equivalence_batch(params, 4)
    assert x.shape == (4, 3, 32, 32) and y.shape == (4, 14)
    assert np.array_equal(x, xray_images.equivalence_batch(params, 4)[0])

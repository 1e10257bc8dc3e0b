import pathlib

from setuptools import find_packages, setup

here = pathlib.Path(__file__).parent
requirements = [
    line.strip() for line in (here / "requirements.txt").read_text().splitlines()
    if line.strip() and not line.startswith("#") and not line.startswith("pytest")
]

setup(
    name="dsan_tf",
    version="0.2.0",
    description="Distance-based Self-Attention Network for NLI (Im & Cho, 2017) "
                "in TensorFlow 2 / Keras 3",
    long_description=(here / "README.md").read_text(),
    long_description_content_type="text/markdown",
    # Only the library: experiments/ (the study, benchmarks and `python -m` entry points of a
    # clone) stays out of site-packages, where a package of that name would collide.
    packages=find_packages(include=["dsan_tf", "dsan_tf.*"]),
    python_requires=">=3.10",
    install_requires=requirements,
    extras_require={"test": ["pytest>=8,<10", "pytest-xdist>=3.5,<4"]},
    entry_points={"console_scripts": [
        "dsan-train=dsan_tf.programs.train:cli",
        "dsan-evaluate=dsan_tf.programs.evaluate:cli",
        "dsan-ensemble=dsan_tf.programs.ensemble:cli",
        "dsan-embed=dsan_tf.programs.embed:cli",
        "dsan-export=dsan_tf.programs.export:cli",
        "dsan-predict=dsan_tf.programs.predict:cli",
        "dsan-summary=dsan_tf.programs.summary:cli",
        "dsan-visualize=dsan_tf.programs.visualize:cli",
        "dsan-encode-setting=dsan_tf.programs.encode_setting:cli",
        "dsan-train-encoded=dsan_tf.programs.train_encoded:cli",
    ]},
)

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
    packages=find_packages(include=["dsan_tf", "dsan_tf.*", "experiments", "experiments.*"]),
    package_data={"experiments": ["configs/*.cfg"]},
    python_requires=">=3.10",
    install_requires=requirements,
    extras_require={"test": ["pytest>=8,<10", "pytest-xdist>=3.5,<4"]},
    entry_points={"console_scripts": [
        "dsan-train=experiments.train:cli",
        "dsan-evaluate=experiments.evaluate:cli",
        "dsan-ensemble=experiments.ensemble:cli",
        "dsan-embed=experiments.embed:cli",
        "dsan-export=experiments.export:cli",
        "dsan-predict=experiments.predict:cli",
        "dsan-summary=experiments.summary:cli",
        "dsan-visualize=experiments.visualize:cli",
    ]},
)

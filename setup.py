from setuptools import find_packages, setup

setup(
    name="ddp-lint",
    version="0.1.0",
    description="Find optimizers built before their model is moved, cast, replaced or wrapped (PyTorch DDP/FSDP).",
    long_description=open("README.md", encoding="utf-8").read(),
    long_description_content_type="text/markdown",
    python_requires=">=3.9",
    packages=find_packages(include=["ddp_lint", "ddp_lint.*"]),
    install_requires=["libcst>=1.1", "pathspec>=0.12", "tomli>=1.1; python_version < '3.11'"],
    extras_require={
        "runtime": ["torch>=2.1", "numpy"],
        "server": ["pygls>=2,<3"],
        "watch": ["watchfiles>=0.21"],
        "test": ["pytest>=7", "hypothesis>=6", "flake8>=6", "pre-commit>=3", "sarif-tools>=3", "nbformat>=5",
                 "pygls>=2,<3", "pytest-lsp>=1,<2", "watchfiles>=0.21", "junitparser>=3"],
    },
    entry_points={
        "console_scripts": ["ddp-lint=ddp_lint.cli:main"],
        "flake8.extension": ["DDP=ddp_lint.frontends.flake8_plugin:Plugin"],
    },
    classifiers=["Programming Language :: Python :: 3", "Framework :: Flake8"],
)

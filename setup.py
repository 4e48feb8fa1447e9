"""Packaging that pyproject.toml cannot say without deprecated keys: ship the ``shad`` kernelspec.

Everything else (metadata, dependencies, packages) is in pyproject.toml. The kernelspec goes to
``<prefix>/share/jupyter/kernels/shad`` on ``pip install .`` and ``pip install -e .`` alike, so it shows
in ``jupyter kernelspec list`` with no extra step; its ``argv[0]`` is ``python``, which Jupyter replaces
with its own interpreter (``python -m shad_kernel install`` covers split environments).
"""

from setuptools import Distribution, setup

KERNEL_FILES = [
    f"shad_kernel/resources/{name}" for name in ("kernel.json", "logo-32x32.png", "logo-64x64.png")
]


class _Distribution(Distribution):
    """setuptools' editable wheel installs data files only when ``has_data()`` says so, a method
    ``Distribution`` lacks (it has ``has_data_files``), so ``pip install -e .`` would drop the kernelspec."""

    def has_data(self) -> bool:
        return bool(self.has_data_files())


setup(
    distclass=_Distribution,
    data_files=[("share/jupyter/kernels/shad", KERNEL_FILES)],
    package_data={"shad_kernel": ["resources/*.json", "resources/*.png"]},
)

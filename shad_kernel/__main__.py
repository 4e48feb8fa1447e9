"""``python -m shad_kernel [-f CONNECTION_FILE]`` starts the kernel; ``... install`` writes its kernelspec."""

from __future__ import annotations

import sys


def main() -> None:
    """Dispatch: ``install ...`` writes the kernelspec, anything else is the kernel app's own arguments."""
    if sys.argv[1:2] == ["install"]:
        from ._install import main as install_main

        sys.exit(install_main(sys.argv[2:]))
    from ipykernel.kernelapp import IPKernelApp

    from ._kernel import ShadKernel

    IPKernelApp.launch_instance(kernel_class=ShadKernel)


if __name__ == "__main__":
    main()

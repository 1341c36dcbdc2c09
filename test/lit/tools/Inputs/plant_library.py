"""Checks that libfusert (argv[1]) does not search the current directory for
the libraries it loads (red team s26): its RUNPATH/RPATH has no empty entry
(an empty entry means '.'), and, where a C compiler is installed, a
libopenblas.so.0 and a libmodel.so planted in the folder fusec-run (argv[2])
runs in are not loaded. Prints OK or the problem; exit 1 on a problem."""
import os
import shutil
import subprocess
import sys

lib, fusec_run, work = sys.argv[1], sys.argv[2], sys.argv[3]
readelf = shutil.which("llvm-readelf") or shutil.which("readelf")
out = subprocess.run([readelf, "-d", lib], capture_output=True, text=True, check=True).stdout
problems = []
for line in out.splitlines():
    if "RUNPATH" in line or "RPATH" in line:
        path = line[line.index("[") + 1:line.rindex("]")]
        if "" in path.split(":"):
            problems.append("%s has an empty entry (the current directory) in %s" % (lib, line.strip()))
cc = shutil.which("cc") or shutil.which("gcc")
if cc:
    os.makedirs(work, exist_ok=True)
    marker = os.path.join(work, "planted-library-ran")
    src = os.path.join(work, "plant.c")
    with open(src, "w") as f:
        f.write('#include <stdio.h>\n__attribute__((constructor)) static void ran(void) {\n'
                '  FILE *f = fopen("%s", "w"); if (f) fclose(f);\n}\n' % marker)
    for name in ("libopenblas.so.0", "libmodel.so"):
        subprocess.run([cc, "-shared", "-fPIC", "-o", os.path.join(work, name), src,
                        "-Wl,-soname," + name], check=True)
    subprocess.run([fusec_run, "--help"], cwd=work, capture_output=True)
    if os.path.exists(marker):
        problems.append("fusec-run loaded a library planted in its working directory")
print("\n".join(problems) if problems else "OK")
sys.exit(1 if problems else 0)

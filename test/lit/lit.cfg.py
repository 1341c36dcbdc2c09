# -*- Python -*-
# lit configuration for fusec's FileCheck tests.
#
# Every subfolder of test/lit is discovered (ir/, frontend/, passes/, ...);
# folders named Inputs hold test data, not tests. The build folder comes from
# `--param fusec_build_dir=DIR`, else $FUSEC_BUILD_DIR, else <repo>/build; its
# bin/ (fusec, fusec-opt, fusec-run) and LLVM 14's tools (FileCheck, not,
# split-file) are put first on PATH.
#
#   lit -sv --param fusec_build_dir=$PWD/build-foo test/lit
#   ctest --test-dir build-foo -R '^lit$'

import os

import lit.formats

config.name = 'fusec'
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = ['.fir', '.test']
config.excludes = ['Inputs', 'CMakeLists.txt', 'lit.cfg.py']
config.test_source_root = os.path.dirname(os.path.abspath(__file__))

repo_root = os.path.dirname(os.path.dirname(config.test_source_root))
build_dir = (lit_config.params.get('fusec_build_dir') or
             os.environ.get('FUSEC_BUILD_DIR') or
             os.path.join(repo_root, 'build'))
build_dir = os.path.abspath(build_dir)
config.test_exec_root = os.path.join(build_dir, 'test', 'lit')

llvm_bin = lit_config.params.get('llvm_bin', '/usr/lib/llvm-14/bin')
path = [os.path.join(build_dir, 'bin'), llvm_bin, config.environment.get('PATH', '')]
config.environment['PATH'] = os.pathsep.join(path)
config.environment['FILECHECK_OPTS'] = '-enable-var-scope'
# Python tools (onnx, numpy) used by some tests come from the caller's setup.
for var in ['HOME', 'PYTHONPATH', 'PYENV_ROOT', 'PYENV_VERSION', 'CUDA_VISIBLE_DEVICES']:
    if var in os.environ:
        config.environment[var] = os.environ[var]

config.substitutions.append(('%fusec_build_dir', build_dir))
config.substitutions.append(('%repo_root', repo_root))
config.substitutions.append(('%shared_models',
                             os.path.join(os.path.dirname(repo_root), 'shared', 'models')))

# Feature cpu-backend: fusec was built with codegen/cpu (FUSEC_CPU_BACKEND,
# on unless configured off); tests of --target cpu say REQUIRES: cpu-backend.
if lit_config.params.get('fusec_cpu_backend', '1') in ('1', 'ON', 'on', 'true'):
    config.available_features.add('cpu-backend')

# Feature asan: the tools were built with ASan + UBSan (FUSEC_SANITIZE);
# tests that limit the address space (ulimit -v) say UNSUPPORTED: asan, since
# ASan reserves terabytes of shadow memory at start.
if lit_config.params.get('fusec_sanitize', '0') in ('1', 'ON', 'on', 'true'):
    config.available_features.add('asan')

if not os.path.exists(os.path.join(build_dir, 'bin', 'fusec-opt')):
    lit_config.warning('fusec-opt not found in %s/bin; build it first' % build_dir)

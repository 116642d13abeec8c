import os

import lit.formats
from lit.llvm import llvm_config

config.name = "Kiln"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.excludes = ["Inputs", "tools", "data", "fuzz", "runtime", "e2e", "quant", "CMakeLists.txt", "lit.cfg.py",
                   "lit.site.cfg.py"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.kiln_obj_root, "test")

llvm_config.with_system_environment(["HOME", "PATH", "TMPDIR"])
llvm_config.use_default_substitutions()

tools_dir = os.path.join(config.test_source_root, "tools")
config.substitutions.append(("%python", config.python_executable))
config.substitutions.append(("%onnx_python", config.onnx_python))
config.substitutions.append(("%onnx_tool", f"{config.onnx_python} {tools_dir}/onnx_tool.py"))
config.substitutions.append(("%gguf_tool", f"{config.python_executable} {tools_dir}/gguf_tool.py"))
config.substitutions.append(("%model_a", os.path.join(config.test_source_root, "data",
                                                       "tiny-llama-A", "tiny-llama-A-f32.gguf")))

# Generated C is built as a user would: strict C99, warnings as errors.
config.substitutions.append(("%cc", "cc -std=c99 -Wall -Wextra -Werror"))
kiln_src = os.path.dirname(config.test_source_root)
config.substitutions.append(("%kiln_include", f"-I{kiln_src} -I{kiln_src}/runtime/include"))
# The flags of the host's ISA variant (--kiln-target=host).
config.substitutions.append(("%host_flags", "-march=native"))

llvm_config.add_tool_substitutions(["kiln-opt", "kiln-compile", "kiln-translate", "kiln-eval"],
                                   [config.kiln_tools_dir])
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)

# lit configuration for Sol's FileCheck tests (*.mlir and *.test under test/).
import os
import lit.formats

config.name = "Sol"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir", ".test"]
config.excludes = ["unit", "models", "tokenizer", "chat", "gpu", "Inputs",
                   "CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py"]
config.test_source_root = os.path.join(config.sol_src_root, "test")
config.test_exec_root = os.path.join(config.sol_obj_root, "test")

# Tools: ours first, then FileCheck, not, count from LLVM 19.
config.environment["PATH"] = os.pathsep.join(
    [config.sol_tools_dir, config.llvm_tools_dir, config.environment.get("PATH", "")])
config.substitutions.append(("%models", os.path.join(config.sol_src_root, "test", "models")))
config.substitutions.append(("%python", config.python_executable))
# The trained default model the repository ships (models/sol-tiny).
config.substitutions.append(("%sol_tiny", os.path.join(config.sol_src_root, "models", "sol-tiny")))
# The real tokenizers (qwen3/, llama3.1/), fetched by scripts/setup into the
# folder the CMake variable SOL_TEST_TOKENIZERS names. When they are missing,
# lit stops with an error that says so, before running any test.
config.substitutions.append(("%tokenizers", config.sol_test_tokenizers))
_missing = [os.path.join(config.sol_test_tokenizers, family, name)
            for family in ("qwen3", "llama3.1")
            for name in ("tokenizer.json", "tokenizer_config.json")
            if not os.path.isfile(os.path.join(config.sol_test_tokenizers, family, name))]
if _missing:
    lit_config.error(f"{', '.join(_missing)} missing: run scripts/setup (or "
                     "scripts/fetch-test-data), which fetches the test tokenizers")

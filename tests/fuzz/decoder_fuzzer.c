/* libFuzzer's entry points around the Python harness tests/support/decoder_fuzz.py: an embedded interpreter calls
 * one_input(data) for every input libFuzzer makes. Only the record decoder (_v2records_c.c, _crc32c.c, built with
 * -fsanitize=fuzzer-no-link by scripts/fuzz_decoder.py and loaded by tests/support/sanitizer_site) is instrumented
 * for coverage, so the fuzzer's feedback is the decoder's own branches. An exception out of one_input (a
 * FuzzFinding: the decoders disagree, or an error that must not escape) is printed and aborts: libFuzzer keeps the
 * input as a crash. ASYNCCONSUMER_FUZZ_PYTHON names the interpreter whose environment (a venv) to run in. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static PyObject *one_input;

static void
fail(const char *what)
{
    fprintf(stderr, "decoder_fuzzer: %s\n", what);
    if (PyErr_Occurred()) {
        PyErr_Print();
    }
    fflush(stderr);
    abort();
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    PyConfig config;
    PyConfig_InitPythonConfig(&config);
    const char *python = getenv("ASYNCCONSUMER_FUZZ_PYTHON");
    if (python != NULL) {
        /* the venv's interpreter as the program: its pyvenv.cfg gives the base install and the venv's packages */
        PyStatus named = PyConfig_SetBytesString(&config, &config.program_name, python);
        if (PyStatus_Exception(named)) {
            Py_ExitStatusException(named);
        }
    }
    PyStatus status = Py_InitializeFromConfig(&config);
    PyConfig_Clear(&config);
    if (PyStatus_Exception(status)) {
        Py_ExitStatusException(status);
    }
    PyObject *harness = PyImport_ImportModule("tests.support.decoder_fuzz");
    if (harness == NULL) {
        fail("cannot import tests.support.decoder_fuzz (run from the checkout, with scripts/fuzz_decoder.py)");
    }
    PyObject *quiet = PyObject_CallMethod(harness, "quiet", NULL);
    if (quiet == NULL) {
        fail("tests.support.decoder_fuzz.quiet() failed");
    }
    Py_DECREF(quiet);
    one_input = PyObject_GetAttrString(harness, "one_input");
    Py_DECREF(harness);
    if (one_input == NULL) {
        fail("no tests.support.decoder_fuzz.one_input");
    }
    return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    PyObject *input = PyBytes_FromStringAndSize((const char *)data, (Py_ssize_t)size);
    if (input == NULL) {
        fail("no memory for the input");
    }
    PyObject *result = PyObject_CallOneArg(one_input, input);
    Py_DECREF(input);
    if (result == NULL) {
        fail("one_input raised: a finding");
    }
    Py_DECREF(result);
    return 0;
}

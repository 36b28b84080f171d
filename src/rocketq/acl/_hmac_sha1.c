/* rocketq.acl._hmac_sha1: a request's signature in one call (see rocketq.acl.signing).
 *
 * A Key holds the two SHA-1 states of HMAC (RFC 2104) after the padded secret, worked out once per
 * secret. Key.digest(fields, names, body) copies them (plain struct copies: no allocation), hashes the
 * UTF-8 text of fields[name] for each name in order, then the body, and finishes the outer hash;
 * Key.signature returns the base64 text of the same digest. SHA-1 is OpenSSL's libcrypto through its
 * low-level API (SHA1_Init/Update/Final; deprecated in OpenSSL 3 in favour of EVP, whose per-call
 * context bookkeeping is exactly what this module avoids). Built by rocketq.native.build beside the
 * mypyc modules when libcrypto's headers are present; without it rocketq.acl.signing uses hashlib.
 */
#define PY_SSIZE_T_CLEAN
#define OPENSSL_SUPPRESS_DEPRECATED
#include <Python.h>
#include <openssl/crypto.h>
#include <openssl/sha.h>
#include <string.h>

#define BLOCK 64             /* SHA-1's block size, which HMAC pads the key to */
#define LARGE_BODY (64 << 10) /* bodies from this size are hashed without the GIL, as hashlib does */

typedef struct {
    PyObject_HEAD
    SHA_CTX inner; /* after hashing the key XOR 0x36 */
    SHA_CTX outer; /* after hashing the key XOR 0x5c */
} KeyObject;

static PyObject *
key_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    static char *keywords[] = {"secret", NULL};
    Py_buffer secret;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "y*:Key", keywords, &secret)) {
        return NULL;
    }
    unsigned char key[BLOCK] = {0};
    if (secret.len > BLOCK) {
        SHA1(secret.buf, (size_t)secret.len, key); /* a long key is replaced by its hash */
    }
    else {
        memcpy(key, secret.buf, (size_t)secret.len);
    }
    PyBuffer_Release(&secret);
    KeyObject *self = (KeyObject *)type->tp_alloc(type, 0);
    if (self != NULL) {
        unsigned char pad[BLOCK];
        for (int i = 0; i < BLOCK; i++) {
            pad[i] = key[i] ^ 0x36;
        }
        SHA1_Init(&self->inner);
        SHA1_Update(&self->inner, pad, BLOCK);
        for (int i = 0; i < BLOCK; i++) {
            pad[i] = key[i] ^ 0x5c;
        }
        SHA1_Init(&self->outer);
        SHA1_Update(&self->outer, pad, BLOCK);
        OPENSSL_cleanse(pad, sizeof pad);
    }
    OPENSSL_cleanse(key, sizeof key);
    return (PyObject *)self;
}

static void
key_dealloc(KeyObject *self)
{
    OPENSSL_cleanse(&self->inner, sizeof self->inner);
    OPENSSL_cleanse(&self->outer, sizeof self->outer);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* Hash one signed value (a str) into ctx. Returns 0, or -1 with an exception set. */
static int
hash_value(SHA_CTX *ctx, PyObject *name, PyObject *value)
{
    if (!PyUnicode_Check(value)) {
        PyErr_Format(PyExc_TypeError, "ext field %R is %.100s, not text", name, Py_TYPE(value)->tp_name);
        return -1;
    }
    Py_ssize_t size;
    const char *text = PyUnicode_AsUTF8AndSize(value, &size); /* ASCII: the str's own bytes */
    if (text == NULL) {
        return -1;
    }
    SHA1_Update(ctx, text, (size_t)size);
    return 0;
}

/* The HMAC-SHA1 of fields[name] for each name of names (a tuple), then body, into out.
 * Returns 0, or -1 with an exception set. */
static int
hmac_of(KeyObject *self, PyObject *const *args, Py_ssize_t nargs, const char *method,
        unsigned char out[SHA_DIGEST_LENGTH])
{
    if (nargs != 3) {
        PyErr_Format(PyExc_TypeError, "Key.%s() takes fields, names and body (%zd given)", method, nargs);
        return -1;
    }
    PyObject *fields = args[0], *names = args[1], *body = args[2];
    if (!PyTuple_Check(names)) {
        PyErr_Format(PyExc_TypeError, "Key.%s(): names must be a tuple, not %.100s", method,
                     Py_TYPE(names)->tp_name);
        return -1;
    }
    SHA_CTX ctx = self->inner;
    Py_ssize_t count = PyTuple_GET_SIZE(names);
    if (PyDict_CheckExact(fields)) {
        for (Py_ssize_t i = 0; i < count; i++) {
            PyObject *name = PyTuple_GET_ITEM(names, i);
            PyObject *value = PyDict_GetItemWithError(fields, name); /* borrowed */
            if (value == NULL) {
                if (!PyErr_Occurred()) {
                    PyErr_SetObject(PyExc_KeyError, name);
                }
                return -1;
            }
            if (hash_value(&ctx, name, value) < 0) {
                return -1;
            }
        }
    }
    else { /* any other mapping */
        for (Py_ssize_t i = 0; i < count; i++) {
            PyObject *name = PyTuple_GET_ITEM(names, i);
            PyObject *value = PyObject_GetItem(fields, name);
            if (value == NULL) {
                return -1;
            }
            int failed = hash_value(&ctx, name, value);
            Py_DECREF(value);
            if (failed) {
                return -1;
            }
        }
    }
    Py_buffer view;
    if (PyObject_GetBuffer(body, &view, PyBUF_SIMPLE) < 0) {
        return -1;
    }
    if (view.len >= LARGE_BODY) {
        Py_BEGIN_ALLOW_THREADS
        SHA1_Update(&ctx, view.buf, (size_t)view.len);
        Py_END_ALLOW_THREADS
    }
    else {
        SHA1_Update(&ctx, view.buf, (size_t)view.len);
    }
    PyBuffer_Release(&view);
    unsigned char inner[SHA_DIGEST_LENGTH];
    SHA1_Final(inner, &ctx);
    ctx = self->outer;
    SHA1_Update(&ctx, inner, sizeof inner);
    SHA1_Final(out, &ctx);
    return 0;
}

static PyObject *
key_digest(KeyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    unsigned char digest[SHA_DIGEST_LENGTH];
    if (hmac_of(self, args, nargs, "digest", digest) < 0) {
        return NULL;
    }
    return PyBytes_FromStringAndSize((const char *)digest, sizeof digest);
}

static const char BASE64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static PyObject *
key_signature(KeyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    unsigned char d[SHA_DIGEST_LENGTH];
    if (hmac_of(self, args, nargs, "signature", d) < 0) {
        return NULL;
    }
    PyObject *text = PyUnicode_New(28, 127); /* 20 bytes: six groups of 3, then 2 bytes and one '=' */
    if (text == NULL) {
        return NULL;
    }
    Py_UCS1 *o = PyUnicode_1BYTE_DATA(text);
    for (int i = 0; i < 18; i += 3, o += 4) {
        unsigned int group = (unsigned int)d[i] << 16 | (unsigned int)d[i + 1] << 8 | d[i + 2];
        o[0] = BASE64[group >> 18 & 63];
        o[1] = BASE64[group >> 12 & 63];
        o[2] = BASE64[group >> 6 & 63];
        o[3] = BASE64[group & 63];
    }
    unsigned int last = (unsigned int)d[18] << 16 | (unsigned int)d[19] << 8;
    o[0] = BASE64[last >> 18 & 63];
    o[1] = BASE64[last >> 12 & 63];
    o[2] = BASE64[last >> 6 & 63];
    o[3] = '=';
    return text;
}

static PyMethodDef key_methods[] = {
    {"digest", (PyCFunction)(void (*)(void))key_digest, METH_FASTCALL,
     "digest($self, fields, names, body, /)\n--\n\n"
     "The raw HMAC-SHA1 (20 bytes) of the UTF-8 text of fields[name] for each name of the tuple names,\n"
     "in that order and without separators, then of body (any contiguous buffer)."},
    {"signature", (PyCFunction)(void (*)(void))key_signature, METH_FASTCALL,
     "signature($self, fields, names, body, /)\n--\n\n"
     "The base64 text of digest(fields, names, body)."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject KeyType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "rocketq.acl._hmac_sha1.Key",
    .tp_doc = "Key(secret)\n--\n\n"
              "A secret key (bytes) made ready for HMAC-SHA1: the hash states after the padded key.",
    .tp_basicsize = sizeof(KeyObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = key_new,
    .tp_dealloc = (destructor)key_dealloc,
    .tp_methods = key_methods,
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "rocketq.acl._hmac_sha1",
    .m_doc = "A request's HMAC-SHA1 signature in one call, over OpenSSL's SHA-1 (see rocketq.acl.signing).",
    .m_size = -1,
};

PyMODINIT_FUNC
PyInit__hmac_sha1(void)
{
    if (PyType_Ready(&KeyType) < 0) {
        return NULL;
    }
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) {
        return NULL;
    }
    if (PyModule_AddObjectRef(m, "Key", (PyObject *)&KeyType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}

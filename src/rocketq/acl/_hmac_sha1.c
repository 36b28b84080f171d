/* rocketq.acl._hmac_sha1: a request's signature in one call (see rocketq.acl.signing).
 *
 * A Key holds the two SHA-1 states of HMAC (RFC 2104) after the padded secret, worked out once per
 * secret. Key.digest(fields, names, body) copies them (plain struct copies: no allocation), hashes the
 * UTF-8 text of fields[name] for each name in order, then the body, and finishes the outer hash;
 * Key.signature returns the base64 text of the same digest. What requests use is the whole rule in one
 * call: Key.sign(fields, body) signs every field but Signature and _UNIQUE_KEY_QUERY in the order of
 * their names (worked out once per sequence of names and kept on the key, ORDERS of them), and
 * Key.verify(fields, body) decodes the claimed Signature as strict base64 and compares it with the
 * HMAC in constant time. The signed values are gathered in a buffer and hashed in pieces, not one
 * SHA1_Update per value. SHA-1 is OpenSSL's libcrypto through its
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

#define FEW_FIELDS 32 /* requests with up to this many ext fields need no allocation here */
#define ORDERS 4      /* the orders of names a key keeps (per kind of request: send, pull, heartbeat...) */

/* The order in which the fields of one sequence of names are signed: a client sends each kind of
 * request with the same names in the same order, so the names are sorted once per kind and key. */
typedef struct {
    PyObject *names;                 /* a tuple of the ext-field names in the order of their dict, or NULL */
    Py_ssize_t count;                /* how many of them are signed */
    unsigned char order[FEW_FIELDS]; /* their positions in names, in the order they are signed */
} Order;

typedef struct {
    PyObject_HEAD
    SHA_CTX inner; /* after hashing the key XOR 0x36 */
    SHA_CTX outer; /* after hashing the key XOR 0x5c */
    Order orders[ORDERS];
    int next_order; /* the one a new order of names replaces */
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
    for (int i = 0; i < ORDERS; i++) {
        Py_CLEAR(self->orders[i].names);
    }
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* The signed text is gathered in a buffer and hashed in pieces of this size: one SHA1_Update per piece
 * instead of one per value (each call has its own bookkeeping). */
#define GATHER 512

typedef struct {
    SHA_CTX ctx;
    size_t used;
    unsigned char buffer[GATHER];
} Gather;

static void
gather(Gather *g, const void *data, size_t size)
{
    if (g->used + size > GATHER) {
        SHA1_Update(&g->ctx, g->buffer, g->used);
        g->used = 0;
        if (size > GATHER) {
            SHA1_Update(&g->ctx, data, size);
            return;
        }
    }
    memcpy(g->buffer + g->used, data, size);
    g->used += size;
}

/* Add one signed value (a str) as UTF-8. Returns 0, or -1 with an exception set. */
static int
gather_value(Gather *g, PyObject *name, PyObject *value)
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
    gather(g, text, (size_t)size);
    return 0;
}

/* Hash the body after the gathered values, finish the inner hash and the outer one into out.
 * Returns 0, or -1 with an exception set. */
static int
finish(KeyObject *self, Gather *g, PyObject *body, unsigned char out[SHA_DIGEST_LENGTH])
{
    Py_buffer view;
    if (PyObject_GetBuffer(body, &view, PyBUF_SIMPLE) < 0) {
        return -1;
    }
    if (view.len >= LARGE_BODY) {
        SHA1_Update(&g->ctx, g->buffer, g->used);
        Py_BEGIN_ALLOW_THREADS
        SHA1_Update(&g->ctx, view.buf, (size_t)view.len);
        Py_END_ALLOW_THREADS
    }
    else {
        gather(g, view.buf, (size_t)view.len);
        SHA1_Update(&g->ctx, g->buffer, g->used);
    }
    PyBuffer_Release(&view);
    unsigned char inner[SHA_DIGEST_LENGTH];
    SHA1_Final(inner, &g->ctx);
    SHA_CTX outer = self->outer;
    SHA1_Update(&outer, inner, sizeof inner);
    SHA1_Final(out, &outer);
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
    Gather g;
    g.ctx = self->inner;
    g.used = 0;
    Py_ssize_t count = PyTuple_GET_SIZE(names);
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *name = PyTuple_GET_ITEM(names, i);
        PyObject *value = PyObject_GetItem(fields, name); /* a dict's item, or a KeyError */
        if (value == NULL) {
            return -1;
        }
        int failed = gather_value(&g, name, value);
        Py_DECREF(value);
        if (failed) {
            return -1;
        }
    }
    return finish(self, &g, body, out);
}

/* Whether name (a str) is the ASCII text of the given length. */
static int
is_name(PyObject *name, const char *text, Py_ssize_t size)
{
    return PyUnicode_IS_ASCII(name) && PyUnicode_GET_LENGTH(name) == size &&
           memcmp(PyUnicode_1BYTE_DATA(name), text, (size_t)size) == 0;
}

#define SIGNATURE "Signature"
#define UNIQUE_KEY_QUERY "_UNIQUE_KEY_QUERY"

/* a < b for two field names in the order they are signed: by code point (UTF-8's byte order). */
static int
name_before(PyObject *a, PyObject *b)
{
    if (PyUnicode_KIND(a) == PyUnicode_1BYTE_KIND && PyUnicode_KIND(b) == PyUnicode_1BYTE_KIND) {
        Py_ssize_t size_a = PyUnicode_GET_LENGTH(a), size_b = PyUnicode_GET_LENGTH(b);
        int order = memcmp(PyUnicode_1BYTE_DATA(a), PyUnicode_1BYTE_DATA(b),
                           (size_t)(size_a < size_b ? size_a : size_b));
        return order < 0 || (order == 0 && size_a < size_b);
    }
    return PyUnicode_Compare(a, b) < 0; /* both str: no error */
}

/* The HMAC-SHA1 of the values of every field of fields (a dict of str) but Signature and, unless
 * sign_unique_key_query, _UNIQUE_KEY_QUERY, in the order of their names, then body, into out; the
 * names sorted on every call (see hmac_of_fields). Returns 0, or -1 with an exception set. */
static int
hmac_of_sorted(KeyObject *self, PyObject *fields, PyObject *body, int sign_unique_key_query,
               unsigned char out[SHA_DIGEST_LENGTH])
{
    PyObject *few[2 * FEW_FIELDS];
    PyObject **items = few; /* the signed (name, value) pairs, borrowed, sorted below by name */
    Py_ssize_t size = PyDict_GET_SIZE(fields);
    if (size > FEW_FIELDS) {
        items = PyMem_New(PyObject *, 2 * (size_t)size);
        if (items == NULL) {
            PyErr_NoMemory();
            return -1;
        }
    }
    int result = -1;
    Py_ssize_t count = 0, position = 0;
    PyObject *name, *value;
    while (PyDict_Next(fields, &position, &name, &value)) {
        if (!PyUnicode_Check(name)) {
            PyErr_Format(PyExc_TypeError, "ext field name %R is %.100s, not text", name, Py_TYPE(name)->tp_name);
            goto done;
        }
        if (is_name(name, SIGNATURE, sizeof SIGNATURE - 1) ||
            (!sign_unique_key_query && is_name(name, UNIQUE_KEY_QUERY, sizeof UNIQUE_KEY_QUERY - 1))) {
            continue;
        }
        Py_ssize_t at = count++; /* insertion sort: a request has a dozen fields */
        while (at > 0 && name_before(name, items[2 * (at - 1)])) {
            items[2 * at] = items[2 * (at - 1)];
            items[2 * at + 1] = items[2 * (at - 1) + 1];
            at--;
        }
        items[2 * at] = name;
        items[2 * at + 1] = value;
    }
    Gather g;
    g.ctx = self->inner;
    g.used = 0;
    for (Py_ssize_t i = 0; i < count; i++) {
        if (gather_value(&g, items[2 * i], items[2 * i + 1]) < 0) {
            goto done;
        }
    }
    result = finish(self, &g, body, out);
done:
    if (items != few) {
        PyMem_Free(items);
    }
    return result;
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

/* Whether a and b (a is a str) have the same text. */
static int
same_text(PyObject *a, PyObject *b)
{
    return a == b || (PyUnicode_Check(b) && PyUnicode_GET_LENGTH(a) == PyUnicode_GET_LENGTH(b) &&
                      PyUnicode_KIND(a) == PyUnicode_KIND(b) &&
                      memcmp(PyUnicode_DATA(a), PyUnicode_DATA(b),
                             (size_t)PyUnicode_GET_LENGTH(a) * PyUnicode_KIND(a)) == 0);
}

/* The order the key keeps for these names (count of them, in their dict's order), or NULL. */
static const Order *
known_order(KeyObject *self, PyObject *const *names, Py_ssize_t count)
{
    for (int k = 0; k < ORDERS; k++) {
        const Order *order = &self->orders[k];
        if (order->names == NULL || PyTuple_GET_SIZE(order->names) != count) {
            continue;
        }
        Py_ssize_t i = 0;
        while (i < count && same_text(PyTuple_GET_ITEM(order->names, i), names[i])) {
            i++;
        }
        if (i == count) {
            return order;
        }
    }
    return NULL;
}

/* Work out the order of these names (count of them, at most FEW_FIELDS) and keep it on the key in
 * place of the one kept longest. Returns it, or NULL with an exception set. */
static const Order *
new_order(KeyObject *self, PyObject *const *names, Py_ssize_t count)
{
    unsigned char sorted[FEW_FIELDS];
    Py_ssize_t signed_count = 0;
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *name = names[i];
        if (!PyUnicode_Check(name)) {
            PyErr_Format(PyExc_TypeError, "ext field name %R is %.100s, not text", name, Py_TYPE(name)->tp_name);
            return NULL;
        }
        if (is_name(name, SIGNATURE, sizeof SIGNATURE - 1) ||
            is_name(name, UNIQUE_KEY_QUERY, sizeof UNIQUE_KEY_QUERY - 1)) {
            continue;
        }
        Py_ssize_t at = signed_count++; /* insertion sort: a request has a dozen fields */
        while (at > 0 && name_before(name, names[sorted[at - 1]])) {
            sorted[at] = sorted[at - 1];
            at--;
        }
        sorted[at] = (unsigned char)i;
    }
    PyObject *kept = PyTuple_New(count);
    if (kept == NULL) {
        return NULL;
    }
    for (Py_ssize_t i = 0; i < count; i++) {
        PyTuple_SET_ITEM(kept, i, Py_NewRef(names[i]));
    }
    Order *order = &self->orders[self->next_order];
    self->next_order = (self->next_order + 1) % ORDERS;
    Py_XSETREF(order->names, kept);
    order->count = signed_count;
    memcpy(order->order, sorted, (size_t)signed_count);
    return order;
}

/* The HMAC-SHA1 of the values of every field of fields (a dict of str) but Signature and, unless
 * sign_unique_key_query, _UNIQUE_KEY_QUERY, in the order of their names, then body, into out.
 * The order of a request's names is looked up among those the key keeps (a few pointer comparisons),
 * else worked out and kept; the rare others (_UNIQUE_KEY_QUERY signed, more than FEW_FIELDS fields)
 * are sorted each time. Returns 0, or -1 with an exception set. */
static int
hmac_of_fields(KeyObject *self, PyObject *fields, PyObject *body, int sign_unique_key_query,
               unsigned char out[SHA_DIGEST_LENGTH])
{
    Py_ssize_t size = PyDict_GET_SIZE(fields);
    if (sign_unique_key_query || size > FEW_FIELDS) {
        return hmac_of_sorted(self, fields, body, sign_unique_key_query, out);
    }
    PyObject *names[FEW_FIELDS], *values[FEW_FIELDS]; /* borrowed, in the dict's order */
    Py_ssize_t count = 0, position = 0;
    PyObject *name, *value;
    while (count < size && PyDict_Next(fields, &position, &name, &value)) {
        names[count] = name;
        values[count] = value;
        count++;
    }
    const Order *order = known_order(self, names, count);
    if (order == NULL && (order = new_order(self, names, count)) == NULL) {
        return -1;
    }
    Gather g;
    g.ctx = self->inner;
    g.used = 0;
    for (Py_ssize_t i = 0; i < order->count; i++) {
        unsigned char at = order->order[i];
        if (gather_value(&g, names[at], values[at]) < 0) {
            return -1;
        }
    }
    return finish(self, &g, body, out);
}

static const char BASE64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
static signed char SEXTETS[128]; /* an ASCII character -> its value in BASE64, or -1 (set up at import) */
static PyObject *signature_name;        /* "Signature", interned (set up at import) */
static PyObject *unique_key_query_name; /* "_UNIQUE_KEY_QUERY" */

/* The base64 text of a digest (28 characters). */
static PyObject *
base64_text(const unsigned char d[SHA_DIGEST_LENGTH])
{
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

static PyObject *
key_signature(KeyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    unsigned char d[SHA_DIGEST_LENGTH];
    if (hmac_of(self, args, nargs, "signature", d) < 0) {
        return NULL;
    }
    return base64_text(d);
}

/* fields as a dict (a new reference): itself, or a dict of any other mapping's items. */
static PyObject *
as_dict(PyObject *fields)
{
    if (PyDict_Check(fields)) {
        return Py_NewRef(fields);
    }
    PyObject *copy = PyDict_New();
    if (copy != NULL && PyDict_Merge(copy, fields, 1) < 0) {
        Py_CLEAR(copy);
    }
    return copy;
}

static int
two_arguments(Py_ssize_t nargs, const char *method)
{
    if (nargs != 2) {
        PyErr_Format(PyExc_TypeError, "Key.%s() takes fields and body (%zd given)", method, nargs);
        return -1;
    }
    return 0;
}

static PyObject *
key_sign(KeyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (two_arguments(nargs, "sign") < 0) {
        return NULL;
    }
    PyObject *fields = as_dict(args[0]);
    if (fields == NULL) {
        return NULL;
    }
    unsigned char d[SHA_DIGEST_LENGTH];
    int failed = hmac_of_fields(self, fields, args[1], 0, d);
    Py_DECREF(fields);
    return failed ? NULL : base64_text(d);
}

/* Decode claimed, a Signature's text, into 20 bytes as strict base64 does (binascii.a2b_base64 with
 * strict_mode): 27 characters of the alphabet then one '='. The low 2 bits of the 27th character carry
 * no data; like binascii, they are not looked at. Returns 1 when it is such a text, else 0. */
static int
decode_claimed(PyObject *claimed, unsigned char out[SHA_DIGEST_LENGTH])
{
    if (!PyUnicode_IS_ASCII(claimed) || PyUnicode_GET_LENGTH(claimed) != 28) {
        return 0;
    }
    const Py_UCS1 *text = PyUnicode_1BYTE_DATA(claimed);
    if (text[27] != '=') {
        return 0;
    }
    unsigned int sextets[27];
    for (int i = 0; i < 27; i++) {
        if (SEXTETS[text[i]] < 0) {
            return 0;
        }
        sextets[i] = (unsigned int)SEXTETS[text[i]];
    }
    for (int i = 0, o = 0; i < 24; i += 4, o += 3) {
        unsigned int group = sextets[i] << 18 | sextets[i + 1] << 12 | sextets[i + 2] << 6 | sextets[i + 3];
        out[o] = (unsigned char)(group >> 16);
        out[o + 1] = (unsigned char)(group >> 8);
        out[o + 2] = (unsigned char)group;
    }
    unsigned int last = sextets[24] << 18 | sextets[25] << 12 | sextets[26] << 6;
    out[18] = (unsigned char)(last >> 16);
    out[19] = (unsigned char)(last >> 8);
    return 1;
}

static PyObject *
key_verify(KeyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (two_arguments(nargs, "verify") < 0) {
        return NULL;
    }
    PyObject *fields = as_dict(args[0]);
    if (fields == NULL) {
        return NULL;
    }
    PyObject *result = NULL;
    PyObject *claimed_text = PyDict_GetItemWithError(fields, signature_name); /* borrowed */
    unsigned char claimed[SHA_DIGEST_LENGTH], d[SHA_DIGEST_LENGTH];
    if (claimed_text == NULL) {
        if (!PyErr_Occurred()) {
            result = Py_NewRef(Py_False);
        }
    }
    else if (!PyUnicode_Check(claimed_text)) {
        PyErr_Format(PyExc_TypeError, "ext field 'Signature' is %.100s, not text", Py_TYPE(claimed_text)->tp_name);
    }
    else if (!decode_claimed(claimed_text, claimed)) {
        result = Py_NewRef(Py_False);
    }
    else if (hmac_of_fields(self, fields, args[1], 0, d) == 0) {
        int matches = CRYPTO_memcmp(d, claimed, sizeof d) == 0;
        int has_flag = matches ? 0 : PyDict_Contains(fields, unique_key_query_name);
        if (has_flag) { /* a Java client of 4.9.4 or later signed _UNIQUE_KEY_QUERY as a field */
            if (has_flag < 0 || hmac_of_fields(self, fields, args[1], 1, d) < 0) {
                goto done;
            }
            matches = CRYPTO_memcmp(d, claimed, sizeof d) == 0;
        }
        result = Py_NewRef(matches ? Py_True : Py_False);
    }
done:
    Py_DECREF(fields);
    return result;
}

static PyMethodDef key_methods[] = {
    {"digest", (PyCFunction)(void (*)(void))key_digest, METH_FASTCALL,
     "digest($self, fields, names, body, /)\n--\n\n"
     "The raw HMAC-SHA1 (20 bytes) of the UTF-8 text of fields[name] for each name of the tuple names,\n"
     "in that order and without separators, then of body (any contiguous buffer)."},
    {"signature", (PyCFunction)(void (*)(void))key_signature, METH_FASTCALL,
     "signature($self, fields, names, body, /)\n--\n\n"
     "The base64 text of digest(fields, names, body)."},
    {"sign", (PyCFunction)(void (*)(void))key_sign, METH_FASTCALL,
     "sign($self, fields, body, /)\n--\n\n"
     "The base64 HMAC-SHA1 of the values of fields (a mapping of str) in the order of their names, all\n"
     "but Signature and _UNIQUE_KEY_QUERY, then of body: a request's Signature."},
    {"verify", (PyCFunction)(void (*)(void))key_verify, METH_FASTCALL,
     "verify($self, fields, body, /)\n--\n\n"
     "True when fields['Signature'] (strict base64) is sign(fields, body), or, when fields has\n"
     "_UNIQUE_KEY_QUERY, the same with that field signed; compared in constant time."},
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
    memset(SEXTETS, -1, sizeof SEXTETS);
    for (int i = 0; i < 64; i++) {
        SEXTETS[(unsigned char)BASE64[i]] = (signed char)i;
    }
    if (signature_name == NULL) {
        signature_name = PyUnicode_InternFromString(SIGNATURE);
        unique_key_query_name = PyUnicode_InternFromString(UNIQUE_KEY_QUERY);
        if (signature_name == NULL || unique_key_query_name == NULL) {
            return NULL;
        }
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

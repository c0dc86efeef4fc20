/*
 * ztgo.h: the C side of the Go package. Each function here makes one or two zt_ calls
 * and, on failure, copies zt_last_error() before returning to Go.
 *
 * Why: zt_last_error() is per OS thread, and a goroutine may move to another OS thread
 * between two cgo calls. A Go function that called zt_open and then, in a second cgo
 * call, zt_last_error could read another goroutine's message, or "". A cgo call runs on
 * one OS thread from start to end, so calling the zt_ function and zt_last_error inside
 * one C function is always right, with no runtime.LockOSThread.
 *
 * On failure *msg is set to a malloc'd copy of the message (NULL if malloc failed);
 * the Go side frees it. On success *msg is left alone.
 */
#ifndef ZTGO_H
#define ZTGO_H

#include <stdlib.h>
#include <string.h>

#include "ztensor.h"

static inline zt_status ztgo_status(zt_status status, char **msg) {
  if (status != ZT_OK) {
    const char *text = zt_last_error(); /* same thread as the call that failed */
    size_t size = strlen(text) + 1;
    *msg = (char *)malloc(size);
    if (*msg != NULL) {
      memcpy(*msg, text, size);
    }
  }
  return status;
}

static inline zt_status ztgo_dtype_from_name(const char *name, uint32_t *out, char **msg) {
  return ztgo_status(zt_dtype_find(name, out), msg);
}

static inline zt_status ztgo_open(const char *path, const zt_open_options *options, zt_reader **out,
                                  char **msg) {
  return ztgo_status(zt_open_with(path, options, out), msg);
}

static inline zt_status ztgo_object_find(const zt_reader *r, const char *name, size_t *index, char **msg) {
  return ztgo_status(zt_object_find(r, name, index), msg);
}

static inline zt_status ztgo_object_info(const zt_reader *r, size_t index, zt_object_info *out, char **msg) {
  return ztgo_status(zt_object_get_info(r, index, out), msg);
}

static inline zt_status ztgo_component_info(const zt_reader *r, size_t object, size_t component,
                                            zt_component_info *out, char **msg) {
  return ztgo_status(zt_component_get_info(r, object, component, out), msg);
}

/* Looks the object up by name, then describes its component `role`. */
static inline zt_status ztgo_find_component(const zt_reader *r, const char *name, const char *role,
                                            zt_component_info *out, char **msg) {
  size_t object, component;
  zt_status s = zt_object_find(r, name, &object);
  if (s == ZT_OK) {
    s = zt_component_find(r, object, role, &component);
  }
  if (s == ZT_OK) {
    s = zt_component_get_info(r, object, component, out);
  }
  return ztgo_status(s, msg);
}

static inline zt_status ztgo_view(const zt_reader *r, const char *name, const char *role, zt_view *out,
                                  char **msg) {
  size_t object;
  zt_status s = zt_object_find(r, name, &object);
  if (s == ZT_OK) {
    s = zt_component_view(r, object, role, out);
  }
  return ztgo_status(s, msg);
}

static inline zt_status ztgo_read(const zt_reader *r, const char *name, const char *role, void *dst,
                                  size_t size, char **msg) {
  size_t object;
  zt_status s = zt_object_find(r, name, &object);
  if (s == ZT_OK) {
    s = zt_component_read(r, object, role, dst, size);
  }
  return ztgo_status(s, msg);
}

static inline zt_status ztgo_read_as(const zt_reader *r, const char *name, const char *role, uint32_t dtype,
                                     void *dst, size_t size, char **msg) {
  size_t object;
  zt_status s = zt_object_find(r, name, &object);
  if (s == ZT_OK) {
    s = zt_component_read_as(r, object, role, dtype, dst, size);
  }
  return ztgo_status(s, msg);
}

static inline zt_status ztgo_verify(const zt_reader *r, char **msg) { return ztgo_status(zt_file_verify(r), msg); }

/* name NULL: the file's attributes. */
static inline zt_status ztgo_attributes(const zt_reader *r, const char *name, const char **json, char **msg) {
  if (name == NULL) {
    return ztgo_status(zt_file_get_attributes_json(r, json), msg);
  }
  size_t object = 0;
  zt_status s = zt_object_find(r, name, &object);
  if (s == ZT_OK) {
    s = zt_object_get_attributes_json(r, object, json);
  }
  return ztgo_status(s, msg);
}

static inline zt_status ztgo_writer_create(const char *path, zt_writer **out, char **msg) {
  return ztgo_status(zt_writer_create(path, out), msg);
}

static inline zt_status ztgo_writer_add(zt_writer *w, const char *name, uint32_t dtype, const uint64_t *shape,
                                        size_t ndim, const void *data, size_t size,
                                        const zt_write_options *options, char **msg) {
  return ztgo_status(zt_writer_add(w, name, dtype, shape, ndim, data, size, options), msg);
}

static inline zt_status ztgo_writer_set_attributes(zt_writer *w, const char *object, const char *json,
                                                   char **msg) {
  return ztgo_status(object == NULL ? zt_writer_set_file_attributes_json(w, json)
                                    : zt_writer_set_object_attributes_json(w, object, json),
                     msg);
}

static inline zt_status ztgo_writer_finish(zt_writer *w, char **msg) {
  return ztgo_status(zt_writer_finish(w), msg);
}

#endif /* ZTGO_H */

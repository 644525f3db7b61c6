/*
 * vsharectl check, bytes and label (vc_check.c), local commands of
 * the table in vc_cmd.c.
 */
#ifndef VSHARE_VC_CHECK_H
#define VSHARE_VC_CHECK_H

#include "vc.h"

int vc_check_cmd(const struct vc_args *a, int argc, char **argv);
int vc_bytes_cmd(const struct vc_args *a, int argc, char **argv);
int vc_label_cmd(const struct vc_args *a, int argc, char **argv);

#endif

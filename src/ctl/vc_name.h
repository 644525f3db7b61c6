/*
 * vsharectl name: names for labels in status and the metrics
 * (VS_MSG_SET_NAME); see vc_name.c.
 */
#ifndef VSHARE_VC_NAME_H
#define VSHARE_VC_NAME_H

#include <stdio.h>

#include "vc.h"

void vc_name_usage(FILE *f);
int vc_name_cmd(const struct vc_args *a, int argc, char **argv);

#endif

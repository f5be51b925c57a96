/* SPDX-License-Identifier: BSD-3-Clause */
/* For the static bundle only: the learning program (selflearn_helper.c, built dynamically
 * linked as $(OUTPUT)/selflearn-helper; the assembler finds it with -I$(OUTPUT)) in
 * gpuprobe's image, between gp_selflearn_helper and gp_selflearn_helper_end. */
	.section .rodata
	.balign 16
	.globl gp_selflearn_helper
	.globl gp_selflearn_helper_end
gp_selflearn_helper:
	.incbin "selflearn-helper"
gp_selflearn_helper_end:
	.section .note.GNU-stack,"",%progbits

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * For the static bundle only (make bundle): Debian's libmicrohttpd.a is built with
 * HTTPS, and a static libgnutls needs libp11-kit.a, which Debian does not ship. This
 * build refuses --web-config's tls_server_config (gp_no_tls below), so libmicrohttpd only
 * calls gnutls_global_init and gnutls_global_deinit; every other entry point fails if it
 * is ever reached. Basic authentication works without TLS.
 */
#include <stdlib.h>

/* src/out/webconfig.c refuses tls_server_config by name in this build. */
const int gp_no_tls = 1;

void *(*gnutls_malloc)(size_t) = malloc;

int gnutls_global_init(void)
{
	return 0;
}

void gnutls_global_deinit(void)
{
}

#define GP_NO_TLS(name) \
	int name(void);  \
	int name(void)   \
	{                \
		return -1; /* GNUTLS_E_... : an error */ \
	}
GP_NO_TLS(gnutls_alpn_set_protocols)
GP_NO_TLS(gnutls_bye)
GP_NO_TLS(gnutls_certificate_allocate_credentials)
GP_NO_TLS(gnutls_certificate_free_credentials)
GP_NO_TLS(gnutls_certificate_server_set_request)
GP_NO_TLS(gnutls_certificate_set_dh_params)
GP_NO_TLS(gnutls_certificate_set_retrieve_function2)
GP_NO_TLS(gnutls_certificate_set_retrieve_function3)
GP_NO_TLS(gnutls_certificate_set_x509_key_mem)
GP_NO_TLS(gnutls_certificate_set_x509_key_mem2)
GP_NO_TLS(gnutls_certificate_set_x509_trust_mem)
GP_NO_TLS(gnutls_cipher_get)
GP_NO_TLS(gnutls_credentials_set)
GP_NO_TLS(gnutls_deinit)
GP_NO_TLS(gnutls_dh_params_deinit)
GP_NO_TLS(gnutls_dh_params_import_pkcs3)
GP_NO_TLS(gnutls_dh_params_init)
GP_NO_TLS(gnutls_handshake)
GP_NO_TLS(gnutls_init)
GP_NO_TLS(gnutls_priority_deinit)
GP_NO_TLS(gnutls_priority_init)
GP_NO_TLS(gnutls_priority_set)
GP_NO_TLS(gnutls_protocol_get_version)
GP_NO_TLS(gnutls_psk_allocate_server_credentials)
GP_NO_TLS(gnutls_psk_free_server_credentials)
GP_NO_TLS(gnutls_psk_set_server_credentials_function)
GP_NO_TLS(gnutls_record_check_pending)
GP_NO_TLS(gnutls_record_get_direction)
GP_NO_TLS(gnutls_record_recv)
GP_NO_TLS(gnutls_record_send)
GP_NO_TLS(gnutls_session_get_ptr)
GP_NO_TLS(gnutls_session_set_ptr)
GP_NO_TLS(gnutls_strerror)
GP_NO_TLS(gnutls_transport_set_int2)

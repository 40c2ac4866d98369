#ifndef TOCSIN_CMOSQUITTO_SHIM_H
#define TOCSIN_CMOSQUITTO_SHIM_H
#include <mosquitto.h>

/* The enum constants Swift needs, as typed values (the header spells them as an anonymous enum). */
static const int CMOSQ_ERR_SUCCESS = MOSQ_ERR_SUCCESS;
static const int CMOSQ_ERR_NO_CONN = MOSQ_ERR_NO_CONN;
static const int CMOSQ_OPT_PROTOCOL_VERSION = MOSQ_OPT_PROTOCOL_VERSION;
static const int CMQTT_PROTOCOL_V311 = MQTT_PROTOCOL_V311;

/* The mosquitto_* functions Swift calls are defined in lazy.c, which loads libmosquitto on first
 * use: the executable does not link it, so no `tocsin` command pays for loading it and its TLS
 * libraries (about 1.5 ms and 1.7 MB of resident pages) unless an [mqtt] backend or [fleet] runs. */
#endif

#ifndef TOCSIN_CMOSQUITTO_SHIM_H
#define TOCSIN_CMOSQUITTO_SHIM_H
#include <mosquitto.h>

/* The enum constants Swift needs, as typed values (the header spells them as an anonymous enum). */
static const int CMOSQ_ERR_SUCCESS = MOSQ_ERR_SUCCESS;
static const int CMOSQ_ERR_NO_CONN = MOSQ_ERR_NO_CONN;
static const int CMOSQ_OPT_PROTOCOL_VERSION = MOSQ_OPT_PROTOCOL_VERSION;
static const int CMQTT_PROTOCOL_V311 = MQTT_PROTOCOL_V311;
#endif

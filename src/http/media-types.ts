/** The media type of every JSON body the service sends. */
export const JSON_TYPE = 'application/json; charset=utf-8'

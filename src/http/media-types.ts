export const JSON_TYPE = 'application/json; charset=utf-8'
